"""`localspec tools [--mcp-config FILE] [--json]`: every tool the agent can use, built-in and from MCP servers.

JSON: a list of {"name", "source" ("builtin" or "mcp:SERVER"), "read_only", "description"}. A server that fails
to start is one line on stderr; the others and the built-ins are still listed.

Also how the commands that run the agent (`run --tools`) say an MCP server failed.
"""

from __future__ import annotations

import sys
from pathlib import Path

from localspec.terminal import safe_json, safe_text
from localspec.tools import Toolbox


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
    # Imported here: the MCP client loads when servers start, not to build `localspec --help`.
    from localspec.mcp import attach_servers

    return attach_servers(toolbox, path, on_notice=stderr_notice)


def stderr_notice(message: str) -> None:
    """An MCP server's failure as a `note:` line on stderr (`tools`, `run --tools`)."""
    print(f"note: {safe_text(message, 2000)}", file=sys.stderr, flush=True)  # a server's words: shown, not run


def tool_rows(toolbox) -> list[dict]:
    return [{"name": t.name, "source": t.source, "read_only": t.kind == "read", "description": t.description}
            for t in toolbox.tool_defs()]


def cmd_tools(args) -> int:
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
        print(safe_json(rows))
        return 0
    # Names, sources and descriptions come from MCP servers: escaped (ESC, OSC, C1, BiDi) like every output.
    shown = [{**r, "name": safe_text(r["name"], 100), "source": safe_text(r["source"], 100)} for r in rows]
    width = max(len(r["name"]) for r in [*shown, {"name": "NAME"}])
    src = max(len(r["source"]) for r in [*shown, {"source": "SOURCE"}])
    print(f"{'NAME':<{width}}  {'SOURCE':<{src}}  {'ACCESS':<6} DESCRIPTION")
    for r in shown:
        access = "read" if r["read_only"] else "write"
        desc = safe_text(r["description"] if len(r["description"]) <= 70 else r["description"][:67] + "...")
        print(f"{r['name']:<{width}}  {r['source']:<{src}}  {access:<6} {desc}")
    return 0
