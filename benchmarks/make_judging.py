"""Write the judging suites: benchmarks/edits_judge.jsonl and benchmarks/workspace_judge.jsonl.

JUDGING ONLY. No drafting change may be tuned on these: they exist to tell whether a gain measured on the tuning
suites (edits.jsonl, edits_heldout.jsonl, multiturn.jsonl, mcp.jsonl, bfcl_subset.jsonl) carries to text the code
never saw while it was being written. They were made before the drafting work of issue 26 and only ever run
before and after it, never looked at pass by pass.

The files are real: snapshots (benchmarks/judge_files/) of this project's own sources and configuration (Python,
CSS, TOML), the same text a user of localspec would have the agent edit.

edits_judge.jsonl: agent sessions that read one file and then edit it turn by turn (as benchmarks/make_edits.py:
`edit_file` with `old` copied from the file and `new` a copy with a change, or `write_file` with the whole file),
later turns seeing the file as the earlier edits left it.

workspace_judge.jsonl: agent sessions over a workspace of those files with five tools (list_dir, read_file,
search_text, run_shell, edit_file); every tool result is what the tool would really return on these files (a
directory listing, a file's lines, grep-style matches), so calls copy paths and names from earlier results as
well as from the request. Deterministic; rerun to regenerate.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

from make_edits import TOOLS as EDIT_SUITE_TOOLS  # benchmarks/ is the script's folder, first on sys.path

HERE = Path(__file__).parent
FILES = HERE / "judge_files"

# The file tools as benchmarks/make_edits.py defines them (the same schemas, so the suites compare), and the other
# workspace tools.
_FILE = {t["function"]["name"]: t for t in EDIT_SUITE_TOOLS}
TOOLS = [
    {"type": "function", "function": {
        "name": "list_dir", "description": "List the entries of a folder in the workspace.",
        "parameters": {"type": "object", "properties": {
            "path": {"type": "string", "description": "Folder, relative to the workspace root."}},
            "required": ["path"]}}},
    _FILE["read_file"],
    {"type": "function", "function": {
        "name": "search_text", "description": "Search the workspace's files for a regular expression.",
        "parameters": {"type": "object", "properties": {
            "pattern": {"type": "string", "description": "Regular expression (Python syntax)."},
            "path": {"type": "string", "description": "Folder or file to search."}},
            "required": ["pattern"]}}},
    {"type": "function", "function": {
        "name": "run_shell", "description": "Run a shell command in the workspace and return its output.",
        "parameters": {"type": "object", "properties": {
            "command": {"type": "string", "description": "The command line."}},
            "required": ["command"]}}},
    _FILE["edit_file"],
    _FILE["write_file"],
]
EDIT_TOOLS = [t for t in TOOLS if t["function"]["name"] in ("read_file", "edit_file", "write_file")]


def edit(request: str, old: str, new: str):
    return ("edit", request, old, new)


def rewrite(request: str, old: str, new: str):
    return ("write", request, old, new)


EDITS = [
    ("errors.py", [
        edit("In errors.py, make unknown_model also say which models exist: add a `known` list parameter.",
             "def unknown_model(name: str) -> APIError:\n"
             "    return APIError(404, f\"The model '{name}' does not exist\", param=\"model\", "
             "code=\"model_not_found\")\n",
             "def unknown_model(name: str, known: list[str]) -> APIError:\n"
             "    return APIError(404, f\"The model '{name}' does not exist (known: {', '.join(known)})\", "
             "param=\"model\",\n                    code=\"model_not_found\")\n"),
        edit("Add a not_found(path) error for unknown routes, 404, code route_not_found, after unauthorized.",
             "def overloaded(retry_after: int) -> APIError:\n",
             "def not_found(path: str) -> APIError:\n"
             "    return APIError(404, f\"No route {path}\", code=\"route_not_found\")\n\n\n"
             "def overloaded(retry_after: int) -> APIError:\n"),
        edit("The overloaded message should say how many seconds to wait.",
             "    return APIError(503, \"The server is busy: too many queued requests; retry later\", "
             "type=\"server_error\",\n",
             "    return APIError(503, f\"The server is busy: too many queued requests; retry in {retry_after} s\",\n"
             "                    type=\"server_error\",\n"),
    ]),
    ("llama.py", [
        edit("In llama.py, also show warnings (level 3) when LOCALSPEC_LLAMA_LOG is set.",
             "    if level == _GGML_LOG_LEVEL_ERROR and os.environ.get(\"LOCALSPEC_LLAMA_LOG\"):\n",
             "    if level >= _GGML_LOG_LEVEL_WARN and os.environ.get(\"LOCALSPEC_LLAMA_LOG\"):\n"),
        edit("Define _GGML_LOG_LEVEL_WARN = 3 next to the error level.",
             "_GGML_LOG_LEVEL_ERROR = 4  # ggml.h: NONE, DEBUG, INFO, WARN, ERROR\n",
             "_GGML_LOG_LEVEL_WARN = 3\n_GGML_LOG_LEVEL_ERROR = 4  # ggml.h: NONE, DEBUG, INFO, WARN, ERROR\n"),
        rewrite("Write llama.py again with the module docstring \"The one module that imports llama_cpp.\"",
                "\"\"\"The single place that imports llama_cpp: quiet logging and one-time backend init.\"\"\"\n",
                "\"\"\"The one module that imports llama_cpp.\"\"\"\n"),
    ]),
    ("pyproject.toml", [
        edit("In pyproject.toml, bump the version to 0.2.0.", "version = \"0.1.0\"\n", "version = \"0.2.0\"\n"),
        edit("Require Python 3.11 or newer.", "requires-python = \">=3.10\"\n", "requires-python = \">=3.11\"\n"),
        edit("Add a `gpu` marker for tests that need a CUDA device, after the slow marker.",
             "    \"slow: uses the real small models (SmolLM2, Gemma-3-270M)\",\n",
             "    \"slow: uses the real small models (SmolLM2, Gemma-3-270M)\",\n"
             "    \"gpu: needs a CUDA device\",\n"),
        edit("Add rich>=13 to the test dependencies after PyYAML.",
             "    \"PyYAML>=5.1\",\n", "    \"PyYAML>=5.1\",\n    \"rich>=13\",\n"),
    ]),
    ("chat.tcss", [
        edit("In chat.tcss, give the header a height of 2.",
             "#header {\n    height: 1;\n", "#header {\n    height: 2;\n"),
        edit("Make the top bar italic as well as bold.",
             "    color: $text;\n    text-style: bold;\n", "    color: $text;\n    text-style: bold italic;\n"),
    ]),
    ("runner.py", [
        edit("In runner.py, let stop() log a warning when the thread is still alive after the timeout.",
             "        self.server.should_exit = True\n        self.thread.join(timeout)\n",
             "        self.server.should_exit = True\n        self.thread.join(timeout)\n"
             "        if self.thread.is_alive():\n"
             "            logging.getLogger(\"localspec.serve\").warning(\"server thread still running\")\n"),
        edit("Import logging at the top, after threading.",
             "import threading\nimport time\n", "import logging\nimport threading\nimport time\n"),
        edit("Raise the graceful shutdown timeout to 5 seconds.",
             "timeout_graceful_shutdown=3,", "timeout_graceful_shutdown=5,"),
    ]),
]


def _exchange(cid: str, name: str, arguments: dict, result: str) -> list[dict]:
    cid = cid[:9]
    return [{"role": "assistant", "content": "", "tool_calls": [
        {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}]},
            {"role": "tool", "tool_call_id": cid, "name": name, "content": result}]


def _truth(call: dict, tools: list[dict]) -> dict:
    truth = {"name": call["name"], "arguments": {k: [v] for k, v in call["arguments"].items()}}
    fn = next(x["function"] for x in tools if x["function"]["name"] == call["name"])
    for opt in fn["parameters"]["properties"]:
        truth["arguments"].setdefault(opt, [""])
    return truth


def build_edits() -> list[dict]:
    rows = []
    for s, (name, turns) in enumerate(EDITS):
        text = (FILES / name).read_text(encoding="utf-8")
        messages: list[dict] = [{"role": "user", "content": f"Open {name}, please."}]
        messages += _exchange(f"judge{s}r", "read_file", {"path": name}, text)
        for t, (kind, request, old, new) in enumerate(turns):
            if text.count(old) != 1:
                raise SystemExit(f"{name} turn {t}: `old` occurs {text.count(old)} times")
            changed = text.replace(old, new)
            call = ({"name": "edit_file", "arguments": {"path": name, "old": old, "new": new}} if kind == "edit"
                    else {"name": "write_file", "arguments": {"path": name, "content": changed}})
            messages.append({"role": "user", "content": request})
            rows.append({"id": f"editjudge_{s}_{t}", "category": "simple_python", "session": f"editjudge{s}",
                         "messages": [dict(m) for m in messages], "tools": EDIT_TOOLS,
                         "ground_truth": [_truth(call, EDIT_TOOLS)], "name_map": {}})
            result = (f"edited {name}: 1 replacement" if kind == "edit" else f"wrote {name} ({len(changed)} bytes)")
            messages += _exchange(f"judge{s}e{t}", call["name"], call["arguments"], result)
            text = changed
    return rows


# -- workspace sessions -------------------------------------------------------------------------------------------

WORKSPACE = sorted(p.name for p in FILES.iterdir() if p.is_file())
PATTERNS = ["APIError", "def ", "import ", "timeout", "should_exit", "height", "llama_cpp", "return", "version",
            r"class \w+", "TODO"]
COMMANDS = ["git status --short", "python -m pytest -q tests/test_serve.py", "wc -l *.py", "git log --oneline -3",
            "python -m compileall -q .", "ls -la"]


def _lines(name: str, a: int | None = None, b: int | None = None) -> str:
    lines = (FILES / name).read_text(encoding="utf-8").splitlines()
    a = a or 1
    b = min(b or len(lines), len(lines))
    return "\n".join(f"{i:>4}  {lines[i - 1]}" for i in range(a, b + 1))


def _search(pattern: str, where: str) -> str:
    rx = re.compile(pattern)
    names = [where] if where in WORKSPACE else WORKSPACE
    hits = []
    for n in names:
        for i, line in enumerate((FILES / n).read_text(encoding="utf-8").splitlines(), 1):
            if rx.search(line):
                hits.append(f"{n}:{i}: {line.strip()}")
    return "\n".join(hits[:12]) + (f"\n... {len(hits) - 12} more" if len(hits) > 12 else "") if hits else \
        "no matches"


def _shell(cmd: str) -> str:
    if cmd.startswith("wc -l"):
        return "\n".join(f"{len((FILES / n).read_text().splitlines()):>5} {n}" for n in WORKSPACE
                         if n.endswith(".py"))
    if cmd == "ls -la":
        return "\n".join(f"-rw-r--r-- 1 dev dev {(FILES / n).stat().st_size:>6} Dec  4 12:00 {n}"
                         for n in WORKSPACE)
    if cmd.startswith("git status"):
        return " M errors.py\n M pyproject.toml\n?? notes.txt"
    if cmd.startswith("git log"):
        return "e8c0bd4 open drafting policy\nb0fe6fe load llama.cpp first\n0d772a3 source gate module"
    if "pytest" in cmd:
        return "........................................ [100%]\n40 passed in 3.21s"
    return "[exit code: 0]"


def _turn(rng: random.Random, seen: list[str]):
    """One request and the call that answers it; `seen` lists files the session's results named (later requests
    refer to them)."""
    kind = rng.choice(["list", "read", "read_seen", "range", "search", "search_in", "shell", "edit"])
    if kind == "list":
        return rng.choice(["What files are in the workspace?", "List the workspace root.", "Show me the folder ."]), \
            {"name": "list_dir", "arguments": {"path": "."}}
    if kind in ("read", "read_seen"):
        f = rng.choice(seen) if kind == "read_seen" and seen else rng.choice(WORKSPACE)
        ask = rng.choice([f"Open {f}.", f"Show me {f}, please.", f"What does {f} contain?"])
        return ask, {"name": "read_file", "arguments": {"path": f}}
    if kind == "range":
        f = rng.choice([n for n in WORKSPACE if n.endswith(".py")])
        a = rng.randint(1, 20)
        b = a + rng.choice([5, 10, 15])
        return f"Show lines {a}-{b} of {f}.", {"name": "read_file", "arguments": {"path": f, "start_line": a,
                                                                                    "end_line": b}}
    if kind == "search":
        p = rng.choice(PATTERNS)
        return f"Where does `{p}` appear?", {"name": "search_text", "arguments": {"pattern": p, "path": "."}}
    if kind == "search_in":
        p, f = rng.choice(PATTERNS), rng.choice(WORKSPACE)
        return f"Search {f} for {p}.", {"name": "search_text", "arguments": {"pattern": p, "path": f}}
    if kind == "shell":
        c = rng.choice(COMMANDS)
        return f"Run `{c}`.", {"name": "run_shell", "arguments": {"command": c}}
    f = rng.choice([n for n in WORKSPACE if n.endswith(".py")])
    lines = [ln for ln in (FILES / f).read_text(encoding="utf-8").splitlines() if len(ln.strip()) > 12]
    line = rng.choice(lines)
    new = line.rstrip() + "  # checked"
    return f"In {f}, mark the line `{line.strip()}` with a `# checked` comment.", \
        {"name": "edit_file", "arguments": {"path": f, "old": line + "\n", "new": new + "\n"}}


def _result(call: dict) -> str:
    a = call["arguments"]
    n = call["name"]
    if n == "list_dir":
        return "\n".join(WORKSPACE)
    if n == "read_file":
        return _lines(a["path"], a.get("start_line"), a.get("end_line"))
    if n == "search_text":
        return _search(a["pattern"], a.get("path", "."))
    if n == "run_shell":
        return _shell(a["command"])
    return f"edited {a['path']}: 1 replacement"


def build_workspace(sessions: int = 6, turns: int = 8, seed: int = 26) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for s in range(sessions):
        messages: list[dict] = []
        seen: list[str] = []
        for t in range(turns):
            text, call = _turn(rng, seen)
            messages.append({"role": "user", "content": text})
            rows.append({"id": f"workspace_{s}_{t}", "category": "simple_python", "session": f"ws{s}",
                         "messages": [dict(m) for m in messages], "tools": TOOLS,
                         "ground_truth": [_truth(call, TOOLS)], "name_map": {}})
            result = _result(call)
            seen += [n for n in WORKSPACE if n in result and n not in seen]
            messages += _exchange(f"ws{s}c{t}", call["name"], call["arguments"], result)
    return rows


if __name__ == "__main__":
    for rows, out in ((build_edits(), "edits_judge.jsonl"), (build_workspace(), "workspace_judge.jsonl")):
        (HERE / out).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        print(f"wrote {HERE / out} ({len(rows)} cases)")
