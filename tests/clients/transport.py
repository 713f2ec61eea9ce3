"""How the Python test clients reach amanmcp: the stdio shim, or, when AMANMCP_TEST_HTTP_URL
(and AMANMCP_TEST_HTTP_TOKEN) are set, the daemon's Streamable HTTP endpoint."""
import contextlib
import os
import urllib.parse

from mcp import StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


@contextlib.asynccontextmanager
async def transport(shim, args, project=None):
    """Yield (read, write). Over stdio: `shim ARGS`; over HTTP: URL?project=PROJECT, or the
    bare URL when no project is given (the client's roots decide)."""
    url = os.environ.get("AMANMCP_TEST_HTTP_URL")
    if not url:
        params = StdioServerParameters(command=shim, args=args, env=dict(os.environ), cwd=os.getcwd())
        async with stdio_client(params) as (read, write):
            yield read, write
        return
    token = os.environ["AMANMCP_TEST_HTTP_TOKEN"]
    endpoint = url if project is None else f"{url}?project={urllib.parse.quote(project)}"
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
        async with streamable_http_client(endpoint, http_client=http) as streams:
            yield streams[0], streams[1]
