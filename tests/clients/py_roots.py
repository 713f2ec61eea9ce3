#!/usr/bin/env python3
"""Without --project, the shim asks a client that declares roots which project is open.

Usage: py_roots.py SHIM PROJECT   (run from a directory that is not inside PROJECT)
Over the daemon's HTTP endpoint (AMANMCP_TEST_HTTP_URL) the session names no project either.
"""
import pathlib
import sys
import time

import anyio
from mcp import ClientSession, types

from transport import transport


def dump(model):
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


async def main(shim, project):
    root = pathlib.Path(project).resolve()

    async def list_roots(context):
        return types.ListRootsResult(roots=[types.Root(uri=root.as_uri(), name=root.name)])

    async with transport(shim, ["serve"]) as (read, write):
        async with ClientSession(read, write, list_roots_callback=list_roots) as session:
            await session.initialize()
            deadline = time.monotonic() + 60
            while True:
                result = dump(await session.call_tool("search", {"query": "pbkdf2_hmac"}))
                paths = [h["path"] for h in result["structuredContent"]["results"]]
                if "app/auth.py" in paths:
                    break
                if time.monotonic() > deadline:
                    print(f"FAIL search in the client's root: {result}")
                    sys.exit(1)
                await anyio.sleep(0.1)
            status = dump(await session.call_tool("index-status", {}))["structuredContent"]
            if status["root"] != str(root):
                print(f"FAIL project root {status['root']} != {root}")
                sys.exit(1)
    print("OK")


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
