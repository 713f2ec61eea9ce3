#!/usr/bin/env python3
"""A second stdio MCP server, built with the official Python SDK, for testing amanmcp's MCP
client (`amanctl mcp`). Tools: `echo(text)` returns the text; `fail()` reports a tool error."""
try:  # mcp >= 2
    from mcp.server.mcpserver import MCPServer as FastMCP
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP

server = FastMCP("echo-server")


@server.tool(description="Return the text unchanged.")
def echo(text: str) -> str:
    return text


@server.tool(description="Always fails.")
def fail() -> str:
    raise ValueError("this tool always fails")


if __name__ == "__main__":
    server.run()
