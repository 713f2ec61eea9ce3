#!/usr/bin/env python3
"""Drive `amanmcp serve` with the official MCP Python SDK (`mcp` on PyPI).

Usage: py_search.py SHIM PROJECT WORD EXPECT_PATH EXPECT_LINE
Spawns the shim on PROJECT, lists tools, searches for WORD until EXPECT_PATH appears with
EXPECT_LINE inside the hit's range, checks argument errors and index-status.
Prints one line per check; exits non-zero on the first failure.
"""
import os
import sys
import time

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def dump(model):
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


def check(cond, what, detail=""):
    if not cond:
        print(f"FAIL {what}: {detail}", flush=True)
        sys.exit(1)
    print(f"PASS {what}", flush=True)


async def main(shim, project, word, expect_path, expect_line):
    params = StdioServerParameters(
        command=shim, args=["serve", "--project", project], env=dict(os.environ)
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            t0 = time.monotonic()
            init = dump(await session.initialize())
            check(init["serverInfo"]["name"] == "amanmcp", "initialize", init)
            check("tools" in init["capabilities"], "tools capability", init)
            print(f"INFO initialize took {(time.monotonic() - t0) * 1000:.0f} ms", flush=True)

            tools = {t["name"]: t for t in dump(await session.list_tools())["tools"]}
            check({"search", "index-status"} <= set(tools), "tools/list", sorted(tools))
            search_schema = tools["search"]["inputSchema"]
            check(search_schema["properties"]["limit"]["maximum"] == 100, "limit schema", search_schema)
            check("outputSchema" in tools["search"], "search outputSchema")

            deadline = time.monotonic() + 60
            while True:
                # The SDK validates structuredContent against the declared outputSchema.
                result = dump(await session.call_tool("search", {"query": word, "limit": 5}))
                check(not result.get("isError"), "search call", result)
                hits = [h for h in result["structuredContent"]["results"] if h["path"] == expect_path]
                if hits:
                    break
                if time.monotonic() > deadline:
                    check(False, f"search finds {word}", result)
                await anyio.sleep(0.2)
            hit = hits[0]
            check(hit["start_line"] <= expect_line <= hit["end_line"], "hit covers the line", hit)
            check(word in hit["snippet"], "snippet has the word", hit)
            text = result["content"][0]["text"]
            check(f"{expect_path}:{hit['start_line']}-{hit['end_line']}" in text, "readable text", text)
            index = result["structuredContent"]["index"]
            check(index["files"] >= 1 and index["chunks"] >= 1, "index summary", index)

            bad = dump(await session.call_tool("search", {"query": 12}))
            check(bad.get("isError") is True, "wrong type is a tool error", bad)
            check("query" in bad["content"][0]["text"], "error names the parameter", bad)
            bad = dump(await session.call_tool("search", {"query": word, "limit": 101}))
            check(bad.get("isError") is True and "limit" in bad["content"][0]["text"], "limit range", bad)

            status = dump(await session.call_tool("index-status", {}))
            check(not status.get("isError"), "index-status", status)
            check(status["structuredContent"]["files"] >= 1, "index-status files", status)
    print("OK", flush=True)


if __name__ == "__main__":
    shim, project, word, expect_path, expect_line = sys.argv[1:6]
    anyio.run(main, shim, project, word, expect_path, int(expect_line))
