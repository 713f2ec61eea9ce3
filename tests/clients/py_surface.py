#!/usr/bin/env python3
"""The MCP surface of `amanmcp serve` through the official Python SDK: resources (paginated),
resource templates, prompts, logging, and `reindex` with progress notifications.

Usage: py_surface.py SHIM PROJECT
With AMANMCP_TEST_HTTP_URL (and AMANMCP_TEST_HTTP_TOKEN) set, the same checks run over the
daemon's Streamable HTTP endpoint (URL?project=PROJECT) instead of the stdio shim.
Prints one line per check; exits non-zero on the first failure.
"""
import pathlib
import sys

import anyio
from mcp import ClientSession

from transport import transport

try:  # mcp 2.x
    from mcp.shared.exceptions import MCPError as McpErr
except ImportError:  # mcp 1.x
    from mcp.shared.exceptions import McpError as McpErr


def dump(model):
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


def check(cond, what, detail=""):
    if not cond:
        print(f"FAIL {what}: {str(detail)[:600]}", flush=True)
        sys.exit(1)
    print(f"PASS {what}", flush=True)


def code_of(exc):
    err = getattr(exc, "error", None)
    return getattr(err, "code", None)


async def main(shim, project):
    root = pathlib.Path(project).resolve()
    logs = []

    async def on_log(params):
        logs.append(dump(params))

    async with transport(shim, ["serve", "--project", project], project) as (read, write):
        async with ClientSession(read, write, logging_callback=on_log) as session:
            init = dump(await session.initialize())
            caps = init["capabilities"]
            check(all(k in caps for k in ("tools", "resources", "prompts", "logging")), "capabilities", caps)
            check("instructions" in init and "lookup" in init["instructions"], "instructions", init)

            tools = {t["name"]: t for t in dump(await session.list_tools())["tools"]}
            check({"search", "lookup", "usages", "callers", "callees", "impact", "trace", "similar", "reindex", "index-status"} <= set(tools), "tools", sorted(tools))
            for name, tool in tools.items():
                for prop, schema in tool["inputSchema"].get("properties", {}).items():
                    check("description" in schema and "type" in schema, f"{name}.{prop} documented", schema)
                check("outputSchema" in tool and tool.get("annotations"), f"{name} output schema and annotations", tool)

            # Wait for the first index, then reindex with a progress token.
            await session.set_logging_level("info")
            progress = []

            async def on_progress(value, total, message):
                progress.append((value, total, message))

            result = dump(await session.call_tool("reindex", {}, progress_callback=on_progress))
            check(not result.get("isError"), "reindex", result)
            check(result["structuredContent"]["scope"] == "project", "reindex scope", result)
            check(len(progress) >= 1, "progress notifications", progress)
            check(progress[-1][0] == progress[-1][1], "progress ends complete", progress)
            await anyio.sleep(0.2)
            check(any("Re-indexed" in str(l.get("data")) for l in logs), "notifications/message", logs)

            # One path, synchronously: a new file becomes searchable at once.
            (root / "fresh_module.py").write_text("def zfreshtoken():\n    return 1\n")
            result = dump(await session.call_tool("reindex", {"path": "fresh_module.py"}))
            check(not result.get("isError"), "reindex one path", result)
            found = dump(await session.call_tool("search", {"query": "zfreshtoken", "mode": "lexical"}))
            paths = [h["path"] for h in found["structuredContent"]["results"]]
            check(paths == ["fresh_module.py"], "reindexed path is searchable", found)
            # Hybrid: an identifier query gets its definition first, vectors taking part.
            found = dump(await session.call_tool("search", {"query": "zfreshtoken"}))
            paths = [h["path"] for h in found["structuredContent"]["results"]]
            check(paths[:1] == ["fresh_module.py"], "hybrid puts the definition first", found)
            check(found["structuredContent"]["semantic"] is True, "hybrid uses vectors", found)
            callers = dump(await session.call_tool("callers", {"symbol": "verify_password"}))
            links = callers["structuredContent"]["links"]
            check([l["from"] for l in links] == ["app/login.py:4 login"] and links[0]["label"] == "resolved", "callers", callers)
            callees = dump(await session.call_tool("callees", {"symbol": "login", "depth": 2}))
            check(any(l.get("to") == "app/auth.py:4 verify_password" for l in callees["structuredContent"]["links"]), "callees", callees)
            bad = dump(await session.call_tool("callers", {"symbol": 7}))
            check(bad.get("isError") is True and "symbol" in bad["content"][0]["text"], "callers wrong type named", bad)
            bad = dump(await session.call_tool("search", {"query": "x", "mode": "fuzzy"}))
            check(bad.get("isError") is True and "mode" in bad["content"][0]["text"], "bad mode named", bad)
            similar = dump(await session.call_tool("similar", {"path": "pkg/m1.py", "line": 1, "limit": 5}))
            check(not similar.get("isError"), "similar", similar)
            sim_paths = [h["path"] for h in similar["structuredContent"]["results"]]
            check(sim_paths and "pkg/m1.py" not in sim_paths, "similar excludes its reference", sim_paths)
            bad = dump(await session.call_tool("reindex", {"path": "../elsewhere"}))
            check(bad.get("isError") is True and "path" in bad["content"][0]["text"], "reindex refuses ..", bad)

            # Resources: every indexed file, over several pages.
            uris, cursor, pages = [], None, 0
            while True:
                page = dump(await session.list_resources(params=None) if cursor is None else await session.list_resources(params={"cursor": cursor}))
                pages += 1
                uris.extend(page["resources"])
                cursor = page.get("nextCursor")
                if not cursor:
                    break
            status = dump(await session.call_tool("index-status", {}))["structuredContent"]
            check(len(uris) == status["files"], "resources/list covers the index", (len(uris), status["files"]))
            check(pages >= 2, "resources/list paginates", pages)
            py = [r for r in uris if r["name"] == "fresh_module.py"]
            check(py and py[0]["mimeType"] == "text/x-python" and py[0]["uri"].startswith("file:///"), "resource shape", py)
            contents = dump(await session.read_resource(py[0]["uri"]))["contents"][0]
            check(contents["text"] == "def zfreshtoken():\n    return 1", "resources/read", contents)
            for uri in ["file:///etc/passwd", (root / ".." / "outside.txt").as_uri(), "https://example.com/x", (root / ".env").as_uri()]:
                try:
                    await session.read_resource(uri)
                    check(False, f"read {uri} refused")
                except McpErr as e:
                    check(code_of(e) == -32002, f"read {uri} -> -32002", e)
            templates = dump(await session.list_resource_templates())["resourceTemplates"]
            check(len(templates) == 1 and templates[0]["uriTemplate"].endswith("/{path}"), "resource templates", templates)

            # Prompts.
            prompts = {p["name"]: p for p in dump(await session.list_prompts())["prompts"]}
            check({"explain-symbol", "find-usages", "review-change"} <= set(prompts), "prompts/list", prompts)
            got = dump(await session.get_prompt("explain-symbol", {"symbol": "Session.request"}))
            check("Session.request" in got["messages"][0]["content"]["text"], "prompts/get", got)
            try:
                await session.get_prompt("explain-symbol", {})
                check(False, "prompt without its argument is refused")
            except McpErr as e:
                check(code_of(e) == -32602, "missing prompt argument -> -32602", e)
    print("OK", flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
