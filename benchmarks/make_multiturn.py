"""Write benchmarks/multiturn.jsonl: agent-style sessions that call the same tools again and again with varied
arguments (the common case in an agent loop). Deterministic; rerun to regenerate.

Each line is one turn in the bfcl_subset format: the conversation so far (earlier calls and their results
included), the tools, and the expected call for the new user request; `session` groups the turns.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

TOOLS = [
    {"type": "function", "function": {
        "name": "read_file", "description": "Read a text file from the workspace.",
        "parameters": {"type": "object", "properties": {
            "path": {"type": "string", "description": "Path relative to the workspace."},
            "start_line": {"type": "integer", "description": "First line to read (1-based)."},
            "end_line": {"type": "integer", "description": "Last line to read."}},
            "required": ["path"]}}},
    {"type": "function", "function": {
        "name": "search_text", "description": "Search files for a regular expression.",
        "parameters": {"type": "object", "properties": {
            "pattern": {"type": "string", "description": "Regular expression."},
            "path": {"type": "string", "description": "Folder to search in."}},
            "required": ["pattern", "path"]}}},
    {"type": "function", "function": {
        "name": "run_shell", "description": "Run a shell command in the workspace.",
        "parameters": {"type": "object", "properties": {
            "command": {"type": "string", "description": "The command line."},
            "timeout_s": {"type": "integer", "description": "Timeout in seconds."}},
            "required": ["command"]}}},
    {"type": "function", "function": {
        "name": "get_weather", "description": "Current weather for a city.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "City name."},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["city", "unit"]}}},
]

FILES = ["src/app.py", "src/utils.py", "src/models.py", "tests/test_app.py", "README.md", "setup.cfg",
         "src/cli.py", "docs/index.md"]
PATTERNS = ["TODO", "def main", "import os", "class Config", "raise ValueError", "FIXME", "logger.info"]
FOLDERS = ["src", "tests", "docs", "."]
COMMANDS = ["git status", "ls -la", "python -m pytest -q", "git log --oneline -5", "wc -l src/app.py",
            "git diff --stat", "du -sh ."]
CITIES = ["Paris", "Berlin", "Tokyo", "Lisbon", "Oslo", "Madrid", "Boston"]


def turn(rng: random.Random):
    kind = rng.choice(["read", "read_range", "search", "shell", "weather"])
    if kind == "read":
        f = rng.choice(FILES)
        return f"Please show me the file {f}.", {"name": "read_file", "arguments": {"path": f}}
    if kind == "read_range":
        f = rng.choice(FILES)
        a = rng.randint(1, 80)
        b = a + rng.choice([10, 20, 40])
        return (f"Read lines {a} to {b} of {f}.",
                {"name": "read_file", "arguments": {"path": f, "start_line": a, "end_line": b}})
    if kind == "search":
        p, d = rng.choice(PATTERNS), rng.choice(FOLDERS)
        return f"Search for '{p}' in {d}.", {"name": "search_text", "arguments": {"pattern": p, "path": d}}
    if kind == "shell":
        c = rng.choice(COMMANDS)
        return f"Run `{c}` for me.", {"name": "run_shell", "arguments": {"command": c}}
    city, unit = rng.choice(CITIES), rng.choice(["celsius", "fahrenheit"])
    return f"What's the weather in {city} in {unit}?", {"name": "get_weather", "arguments": {"city": city, "unit": unit}}


def result_for(call: dict) -> str:
    a = call["arguments"]
    if call["name"] == "read_file":
        return f"(contents of {a['path']}: 42 lines)"
    if call["name"] == "search_text":
        return f"{a['path']}/main.py:12: {a['pattern']}"
    if call["name"] == "run_shell":
        return "[exit code: 0]\nok"
    return f"{a['city']}: 18 degrees, clear"


def build(sessions: int = 6, turns: int = 8, seed: int = 7):
    rng = random.Random(seed)
    rows = []
    for s in range(sessions):
        messages: list[dict] = []
        for t in range(turns):
            text, call = turn(rng)
            messages.append({"role": "user", "content": text})
            truth = {"name": call["name"], "arguments": {k: [v] for k, v in call["arguments"].items()}}
            fn = next(x["function"] for x in TOOLS if x["function"]["name"] == call["name"])
            for opt in fn["parameters"]["properties"]:
                truth["arguments"].setdefault(opt, [""])  # optional parameters may be omitted
            rows.append({"id": f"multiturn_{s}_{t}", "category": "simple_python", "session": f"s{s}",
                         "messages": [dict(m) for m in messages], "tools": TOOLS, "ground_truth": [truth],
                         "name_map": {}})
            cid = f"call{s}{t:05d}"[:9]
            messages.append({"role": "assistant", "content": "", "tool_calls": [
                {"id": cid, "type": "function",
                 "function": {"name": call["name"], "arguments": json.dumps(call["arguments"])}}]})
            messages.append({"role": "tool", "tool_call_id": cid, "name": call["name"], "content": result_for(call)})
    return rows


if __name__ == "__main__":
    out = Path(__file__).with_name("multiturn.jsonl")
    out.write_text("".join(json.dumps(r) + "\n" for r in build()), encoding="utf-8")
    print(f"wrote {out}")
