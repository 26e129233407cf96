"""`localspec tools [--mcp-config FILE] [--json]`: every tool the agent can use, built-in and from MCP servers.

JSON: a list of {"name", "source" ("builtin" or "mcp:SERVER"), "read_only", "description"}. A server that fails
to start is one line on stderr; the others and the built-ins are still listed.

Also the shared start-up of MCP servers for the commands that run the agent (`run --tools`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def add_mcp_arg(p) -> None:
    p.add_argument("--mcp-config", metavar="FILE", default=None,
                   help="MCP servers (mcpServers JSON); default: mcp.json in the config folder")


def register(sub) -> None:
    p = sub.add_parser("tools", help="list the tools the agent can use (built-in and MCP servers)")
    add_mcp_arg(p)
    p.add_argument("--json", action="store_true", help="print a JSON list")
    p.set_defaults(func=cmd_tools)


def start_mcp(path: str | None, toolbox):
    """The MCP servers of mcp.json (or --mcp-config FILE) starting in the background, their tools offered through
    `toolbox`, failures as `note:` lines on stderr; None when none is configured."""
    from localspec.mcp import attach_servers

    return attach_servers(toolbox, path, on_notice=_stderr_notice)


def _stderr_notice(message: str) -> None:
    print(f"note: {message}", file=sys.stderr, flush=True)


def tool_rows(toolbox) -> list[dict]:
    return [{"name": t.name, "source": t.source, "read_only": t.kind == "read", "description": t.description}
            for t in toolbox.tool_defs()]


def cmd_tools(args) -> int:
    from localspec.tools import Toolbox

    toolbox = Toolbox(Path.cwd(), "ask")  # listing only: nothing runs
    mcp = start_mcp(args.mcp_config, toolbox)
    try:
        if mcp is not None:
            mcp.wait()
        rows = tool_rows(toolbox)
    finally:
        if mcp is not None:
            mcp.close()
    if args.json:
        print(json.dumps(rows, ensure_ascii=False))
        return 0
    width = max(len(r["name"]) for r in [*rows, {"name": "NAME"}])
    src = max(len(r["source"]) for r in [*rows, {"source": "SOURCE"}])
    print(f"{'NAME':<{width}}  {'SOURCE':<{src}}  {'ACCESS':<6} DESCRIPTION")
    for r in rows:
        access = "read" if r["read_only"] else "write"
        desc = r["description"] if len(r["description"]) <= 70 else r["description"][:67] + "..."
        print(f"{r['name']:<{width}}  {r['source']:<{src}}  {access:<6} {desc}")
    return 0
