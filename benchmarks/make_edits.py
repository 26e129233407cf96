"""Write benchmarks/edits.jsonl and benchmarks/edits_heldout.jsonl: agent sessions that edit real files.

Each session reads one file (its text comes back raw as the read_file result, as the tool returns it), then asks
for edits one turn at a time; each turn is a case whose expected call is `edit_file` (old copied exactly from the
file, new mostly a copy with a change) or `write_file` (the whole file again, changed). Later turns see the file as
the earlier edits left it. The files are under benchmarks/edit_files/ (Python, JavaScript, TOML, YAML, Markdown).

edits.jsonl is the suite drafting may be tuned on; edits_heldout.jsonl (other files, other languages' quirks) is
for judging: a gain that shows only on the first is not a gain. Deterministic; rerun to regenerate.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).parent
FILES = HERE / "edit_files"

TOOLS = [
    {"type": "function", "function": {
        "name": "read_file", "description": "Read a text file from the workspace.",
        "parameters": {"type": "object", "properties": {
            "path": {"type": "string", "description": "File path, relative to the workspace root."},
            "start_line": {"type": "integer", "description": "First line to return (1-based, inclusive)."},
            "end_line": {"type": "integer", "description": "Last line to return (1-based, inclusive)."}},
            "required": ["path"]}}},
    {"type": "function", "function": {
        "name": "edit_file", "description": "Replace one exact occurrence of text in a file.",
        "parameters": {"type": "object", "properties": {
            "path": {"type": "string", "description": "File path, relative to the workspace root."},
            "old": {"type": "string", "description": "Exact text to replace; must occur exactly once in the file."},
            "new": {"type": "string", "description": "Replacement text."}},
            "required": ["path", "old", "new"]}}},
    {"type": "function", "function": {
        "name": "write_file", "description": "Write a whole file (created or replaced).",
        "parameters": {"type": "object", "properties": {
            "path": {"type": "string", "description": "File path, relative to the workspace root."},
            "content": {"type": "string", "description": "The complete new file content."}},
            "required": ["path", "content"]}}},
]


def edit(request: str, old: str, new: str):
    return ("edit", request, old, new)


def rewrite(request: str, old: str, new: str):
    """A write_file turn: the whole file again with `old` replaced by `new`."""
    return ("write", request, old, new)


# (file, turns). Each `old` must occur exactly once in the file as the earlier turns left it.
TUNE = [
    ("inventory.py", [
        edit("In inventory.py, make restock() also refuse amounts above 10000 with a ValueError.",
             '        if amount <= 0:\n            raise ValueError("amount must be positive")\n',
             '        if amount <= 0:\n            raise ValueError("amount must be positive")\n'
             '        if amount > 10000:\n            raise ValueError("amount must be at most 10000")\n'),
        edit("Rename low_stock to items_below and keep its behaviour.",
             "    def low_stock(self, threshold: int = 5) -> list[Item]:\n",
             "    def items_below(self, threshold: int = 5) -> list[Item]:\n"),
        edit("main() still calls the old name; fix it.",
             "    for item in inv.low_stock():\n", "    for item in inv.items_below():\n"),
        edit("Make save() write the JSON with sorted keys.",
             '        self.path.write_text(json.dumps({"items": rows}, indent=2), encoding="utf-8")\n',
             '        self.path.write_text(json.dumps({"items": rows}, indent=2, sort_keys=True), encoding="utf-8")\n'),
        edit("In sell(), say how many were asked for in the error message too.",
             '            raise ValueError(f"only {item.stock} of {item.name!r} left")\n',
             '            raise ValueError(f"asked for {amount}, only {item.stock} of {item.name!r} left")\n'),
        rewrite("Write inventory.py again with a module docstring that also says the data lives in inventory.json.",
                '"""Inventory of a small shop: items, stock levels and reorder rules."""\n',
                '"""Inventory of a small shop: items, stock levels and reorder rules (stored in inventory.json)."""\n'),
    ]),
    ("server.js", [
        edit("In server.js, answer 400 with a clear error when the POST body is not valid JSON.",
             "    const body = JSON.parse(await readBody(req));\n",
             "    let body;\n    try {\n      body = JSON.parse(await readBody(req));\n    } catch (err) {\n"
             "      return sendJson(res, 400, { error: 'invalid JSON' });\n    }\n"),
        edit("Make the body limit 64 kB instead of 1 MB.",
             "      if (data.length > 1e6) {\n", "      if (data.length > 64 * 1024) {\n"),
        edit("Add a PATCH /todos/:id that marks a todo as done.",
             "  if (match && req.method === 'DELETE') {\n",
             "  if (match && req.method === 'PATCH') {\n    const todo = todos.get(Number(match[1]));\n"
             "    if (!todo) {\n      return sendJson(res, 404, { error: 'not found' });\n    }\n"
             "    todo.done = true;\n    return sendJson(res, 200, todo);\n  }\n"
             "  if (match && req.method === 'DELETE') {\n"),
        edit("Log the port with the host name too.",
             "}).listen(PORT, () => console.log(`listening on :${PORT}`));\n",
             "}).listen(PORT, () => console.log(`listening on http://localhost:${PORT}`));\n"),
        rewrite("Rewrite server.js so the default port is 3000.",
                "const PORT = process.env.PORT || 8080;\n", "const PORT = process.env.PORT || 3000;\n"),
    ]),
    ("settings.toml", [
        edit("In settings.toml, run the job at 4 in the morning instead of 3.",
             'schedule = "0 3 * * *"\n', 'schedule = "0 4 * * *"\n'),
        edit("Raise the database pool to 16 connections and turn off SSL.",
             "pool_size = 8\nssl = true\n", "pool_size = 16\nssl = false\n"),
        edit("Add legal@example.org to the recipients.",
             'recipients = ["ops@example.org", "finance@example.org"]\n',
             'recipients = ["ops@example.org", "finance@example.org", "legal@example.org"]\n'),
        rewrite("Write settings.toml again with logging at debug level.",
                'level = "info"\n', 'level = "debug"\n'),
    ]),
    ("GUIDE.md", [
        edit("In GUIDE.md, require Python 3.11 or newer.",
             "1. Install Python 3.10 or newer.\n", "1. Install Python 3.11 or newer.\n"),
        edit("Add a style rule: no function longer than 50 lines.",
             "- Keep functions small and name them for what they do.\n",
             "- Keep functions small and name them for what they do.\n- No function longer than 50 lines.\n"),
        edit("Say that bug reports should include the operating system too.",
             "Include the output of `localspec doctor`.\n",
             "Include the output of `localspec doctor` and your operating system.\n"),
        rewrite("Write GUIDE.md again with the title \"How to contribute\".",
                "# Contributing guide\n", "# How to contribute\n"),
    ]),
]

HELDOUT = [
    ("shapes.py", [
        edit("In shapes.py, add a __eq__ to Point comparing x and y.",
             '    def __repr__(self) -> str:\n        return f"Point({self.x}, {self.y})"\n',
             '    def __repr__(self) -> str:\n        return f"Point({self.x}, {self.y})"\n\n'
             '    def __eq__(self, other: object) -> bool:\n'
             '        return isinstance(other, Point) and (self.x, self.y) == (other.x, other.y)\n'),
        edit("regular_polygon must refuse n below 3.",
             "    step = 2 * math.pi / n\n",
             '    if n < 3:\n        raise ValueError("n must be at least 3")\n    step = 2 * math.pi / n\n'),
        edit("Name the shoelace comment properly: 'Shoelace formula (Gauss's area formula).'",
             "        # Shoelace formula.\n", "        # Shoelace formula (Gauss's area formula).\n"),
        rewrite("Write shapes.py again with the docstring \"Geometry helpers for plots and maps.\"",
                '"""Geometry helpers used by the plotting code."""\n', '"""Geometry helpers for plots and maps."""\n'),
    ]),
    ("cart.js", [
        edit("In cart.js, refuse quantities below 1 in add().",
             "  add(product, quantity = 1) {\n",
             "  add(product, quantity = 1) {\n    if (quantity < 1) {\n"
             "      throw new RangeError('quantity must be at least 1');\n    }\n"),
        edit("Format amounts for en-US instead of de-DE.",
             "    return new Intl.NumberFormat('de-DE', { style: 'currency', currency: this.currency }).format(amount);\n",
             "    return new Intl.NumberFormat('en-US', { style: 'currency', currency: this.currency }).format(amount);\n"),
        edit("Add a clear() method after remove().",
             "  remove(productId) {\n    this.lines = this.lines.filter((l) => l.product.id !== productId);\n  }\n",
             "  remove(productId) {\n    this.lines = this.lines.filter((l) => l.product.id !== productId);\n  }\n\n"
             "  clear() {\n    this.lines = [];\n  }\n"),
        rewrite("Write cart.js again with USD as the default currency.",
                "  constructor(currency = 'EUR') {\n", "  constructor(currency = 'USD') {\n"),
    ]),
    ("ci.yml", [
        edit("In ci.yml, also test Python 3.13.",
             '        python-version: ["3.10", "3.11", "3.12"]\n',
             '        python-version: ["3.10", "3.11", "3.12", "3.13"]\n'),
        edit("Run the tests with -x so they stop at the first failure.",
             '        run: pytest -q -m "not slow"\n', '        run: pytest -q -x -m "not slow"\n'),
        rewrite("Write ci.yml again so it also runs on the release branch.",
                "    branches: [main]\n", "    branches: [main, release]\n"),
    ]),
    ("CHANGELOG.md", [
        edit("In CHANGELOG.md, add under 0.3.0 Fixed: \"Ctrl+C cancels a running reply.\"",
             "- Closed pipes end quietly (`localspec models --json | head`).\n",
             "- Closed pipes end quietly (`localspec models --json | head`).\n- Ctrl+C cancels a running reply.\n"),
        edit("The 0.2.0 default pair line should say Qwen3-4B.",
             "- The default pair is now Qwen3-1.7B with a 0.6B draft.\n",
             "- The default pair is now Qwen3-4B with a 0.6B draft.\n"),
        rewrite("Write CHANGELOG.md again with 0.1.0 described as \"First public release.\"",
                "- First release.\n", "- First public release.\n"),
    ]),
]


def build(plan, prefix: str) -> list[dict]:
    rows = []
    for s, (name, turns) in enumerate(plan):
        text = (FILES / name).read_text(encoding="utf-8")
        messages: list[dict] = [{"role": "user", "content": f"Show me {name}."}]
        messages += _exchange(f"{prefix}{s}r", "read_file", {"path": name}, text)
        for t, (kind, request, old, new) in enumerate(turns):
            if text.count(old) != 1:
                raise SystemExit(f"{name} turn {t}: the text to replace occurs {text.count(old)} times")
            changed = text.replace(old, new)
            call = ({"name": "edit_file", "arguments": {"path": name, "old": old, "new": new}} if kind == "edit"
                    else {"name": "write_file", "arguments": {"path": name, "content": changed}})
            messages.append({"role": "user", "content": request})
            truth = {"name": call["name"], "arguments": {k: [v] for k, v in call["arguments"].items()}}
            rows.append({"id": f"{prefix}_{s}_{t}", "category": "simple_python", "session": f"{prefix}{s}",
                         "messages": [dict(m) for m in messages], "tools": TOOLS, "ground_truth": [truth],
                         "name_map": {}})
            result = (f"edited {name}: 1 replacement" if kind == "edit" else f"wrote {name} ({len(changed)} bytes)")
            messages += _exchange(f"{prefix}{s}e{t}", call["name"], call["arguments"], result)
            text = changed
    return rows


def _exchange(cid: str, name: str, arguments: dict, result: str) -> list[dict]:
    cid = cid[:9]
    return [{"role": "assistant", "content": "", "tool_calls": [
                {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}]},
            {"role": "tool", "tool_call_id": cid, "name": name, "content": result}]


if __name__ == "__main__":
    for plan, prefix, out in ((TUNE, "edits", "edits.jsonl"), (HELDOUT, "heldout", "edits_heldout.jsonl")):
        rows = build(plan, prefix)
        (HERE / out).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        print(f"wrote {HERE / out} ({len(rows)} cases)")
