"""Write benchmarks/mcp.jsonl: agent sessions whose tools come from an MCP server (the test server,
tests/mcp/server.py --extra), taken through localspec.mcp exactly as the agent sees them: the server's names (a
clash with a built-in becomes `notes__read_file`), descriptions and cleaned JSON Schemas. Deterministic apart from
the server; rerun after changing the server or the adapter.

    python benchmarks/make_mcp.py            # (re)write benchmarks/mcp.jsonl
    localspec bench benchmarks/mcp.jsonl --target MODEL.gguf --configs baseline,toolspec

Each line is one turn in the bfcl_subset format (like multiturn.jsonl): the conversation so far, the tools, and
the expected call; `session` groups the turns.
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SERVER = ROOT / "tests" / "mcp" / "server.py"

NOTES = ["groceries", "ideas", "meeting-notes", "todo", "reading_list", "travel", "recipes", "budget"]
TEXTS = ["buy oat milk and eggs", "try the new pasta recipe on Friday", "ask Dana about the release date",
         "call the plumber before noon", "finish chapter 3 of the book", "book the train to Lyon",
         "pay the electricity bill", "water the plants twice this week"]
PATHS = ["src/app.py", "README.md", "docs/index.md", "setup.cfg", "src/utils.py", "tests/test_app.py"]


def mcp_tools() -> list[dict]:
    """The test server's tools as the agent's tool list shows them (plus the built-in read_file they clash with)."""
    sys.path.insert(0, str(ROOT))
    from localspec.mcp import McpConfig, McpTools, ServerConfig
    from localspec.tools import Toolbox

    with tempfile.TemporaryDirectory() as notes:
        config = McpConfig(Path("mcp.json"), (ServerConfig(name="notes", command=sys.executable,
                                                           args=(str(SERVER), "--dir", notes, "--extra")),))
        with McpTools(config, log_dir=None) as mcp:
            mcp.start()
            mcp.wait()
            toolbox = Toolbox(notes)
            toolbox.add_source(mcp)
            failed = [s for s in mcp.servers() if s.state != "running"]
            if failed:
                raise SystemExit(f"the test server did not start: {failed[0].error}")
            keep = {d.name for d in toolbox.tool_defs() if d.source == "mcp:notes"} | {"read_file"}
            return [s for s in toolbox.specs() if s["function"]["name"] in keep]


def turn(rng: random.Random):
    kind = rng.choice(["read", "read", "write", "write", "file", "dump"])
    if kind == "read":
        n = rng.choice(NOTES)
        return f"What does my note {n} say?", {"name": "read_note", "arguments": {"name": n}}
    if kind == "write":
        n, t = rng.choice(NOTES), rng.choice(TEXTS)
        return (f"Save a note called {n} that says: {t}",
                {"name": "write_note", "arguments": {"name": n, "text": t}})
    if kind == "file":
        p = rng.choice(PATHS)
        return f"Get the notes server's copy of {p}.", {"name": "notes__read_file", "arguments": {"path": p}}
    size = rng.choice([64, 120, 256, 500, 1000])
    return f"Give me {size} characters of filler text.", {"name": "dump", "arguments": {"size": size}}


def result_for(call: dict) -> str:
    a = call["arguments"]
    if call["name"] == "read_note":
        return f"{rng_text(a['name'])}\n"
    if call["name"] == "write_note":
        return f"saved {a['name']} ({len(a['text'])} characters)"
    if call["name"] == "notes__read_file":
        return f"server copy of {a['path']}"
    return "x" * min(a["size"], 80)


def rng_text(name: str) -> str:
    return TEXTS[sum(map(ord, name)) % len(TEXTS)]


def build(tools: list[dict], sessions: int = 6, turns: int = 8, seed: int = 11) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for s in range(sessions):
        messages: list[dict] = []
        for t in range(turns):
            text, call = turn(rng)
            messages.append({"role": "user", "content": text})
            truth = {"name": call["name"], "arguments": {k: [v] for k, v in call["arguments"].items()}}
            rows.append({"id": f"mcp_{s}_{t}", "category": "simple_python", "session": f"s{s}",
                         "messages": [dict(m) for m in messages], "tools": tools, "ground_truth": [truth],
                         "name_map": {}})
            cid = f"mcp{s}{t:06d}"[:9]
            messages.append({"role": "assistant", "content": "", "tool_calls": [
                {"id": cid, "type": "function",
                 "function": {"name": call["name"], "arguments": json.dumps(call["arguments"])}}]})
            messages.append({"role": "tool", "tool_call_id": cid, "name": call["name"], "content": result_for(call)})
    return rows


if __name__ == "__main__":
    out = Path(__file__).with_name("mcp.jsonl")
    out.write_text("".join(json.dumps(r) + "\n" for r in build(mcp_tools())), encoding="utf-8")
    print(f"wrote {out}")
