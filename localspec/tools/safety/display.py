"""What an approver shows: one rendering for every approver (terminal and TUI), safe to put on a terminal.

Why: the user approves what they see, so what they see must be what runs. Text from the model can carry
terminal escapes (ESC [2K and CR erase a line and draw another), BiDi overrides and zero-width characters that
reorder or hide text, and can be huge (a 300 MB diff line). Every string shown goes through safe_text()
(localspec/terminal.py, the rule for all output), which escapes those characters visibly (\\x1b, \\u202e), zero-width
joiners included, and bounds the length, saying how much was left out.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

# The escaping rule itself is localspec/terminal.py, shared by every printer and widget; re-exported here.
from localspec.terminal import hidden_characters, safe_text  # noqa: F401 (re-exported)

COMMAND_SHOWN_CHARS = 4000  # a longer command is shown cut, and rated at least "medium" for it
LINE_CHARS = 400  # one shown line of a diff or of the arguments
DIFF_LINES = 60
ARGUMENT_CHARS = 2000  # each string value in the arguments view


def human_size(n: int) -> str:
    size: float = n
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{size} bytes"


def bounded_lines(text: str, max_lines: int = DIFF_LINES, line_chars: int = LINE_CHARS) -> tuple[list[str], str]:
    """The first lines of a (possibly huge) text, each escaped and cut, plus a note on what was left out.

    Never splits the whole text: a 300 MB single-line diff costs one bounded slice.
    """
    lines: list[str] = []
    pos, n, cut_lines = 0, len(text), 0
    while pos < n and len(lines) < max_lines:
        end = text.find("\n", pos)
        end = n if end < 0 else end
        if end - pos > line_chars:
            lines.append(safe_text(text[pos:pos + line_chars]) + f"… [{end - pos - line_chars:,} more characters]")
            cut_lines += 1
        else:
            lines.append(safe_text(text[pos:end]))
        pos = end + 1
    note = ""
    if pos < n or cut_lines:
        total = text.count("\n") + (0 if text.endswith("\n") else 1)
        note = (f"[{n:,} characters (about {human_size(n)}) in {total:,} line(s); showing {len(lines)} line(s)"
                + (f", {cut_lines} cut at {line_chars} characters" if cut_lines else "") + "]")
    return lines, note


def bounded_arguments(arguments: Any, limit: int = ARGUMENT_CHARS, depth: int = 0) -> Any:
    """The arguments with every long string cut (the JSON view never holds a 300 MB value)."""
    if depth > 20:
        return "…"
    if isinstance(arguments, str):
        return arguments if len(arguments) <= limit else \
            arguments[:limit] + f"… [{len(arguments) - limit:,} more characters not shown]"
    if isinstance(arguments, dict):
        return {bounded_arguments(str(k), 200): bounded_arguments(v, limit, depth + 1)
                for k, v in list(arguments.items())[:100]}
    if isinstance(arguments, (list, tuple)):
        return [bounded_arguments(v, limit, depth + 1) for v in list(arguments)[:100]]
    return arguments


def arguments_text(arguments: Any) -> str:
    """Pretty JSON of the bounded arguments, control characters escaped by JSON or safe_text."""
    try:
        text = json.dumps(bounded_arguments(arguments), ensure_ascii=False, indent=2, default=str)
    except (TypeError, ValueError, RecursionError):
        text = repr(arguments)[:ARGUMENT_CHARS]
    return safe_text(text, ARGUMENT_CHARS * 4, newlines=True)


def arguments_line(arguments: Any) -> str:
    """A tool call's arguments on one line, bounded and escaped (a write_file call may carry 300 MB)."""
    try:
        text = json.dumps(bounded_arguments(arguments, 200), ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        text = repr(arguments)[:ARGUMENT_CHARS]
    return safe_text(text, ARGUMENT_CHARS)


@dataclass(frozen=True)
class Line:
    """One line of an approval display. kind: title, command, danger, cwd, always, never, warning, diff, note,
    arguments. text is already safe to print."""
    kind: str
    text: str


def approval_lines(request, *, arguments: bool = True) -> list[Line]:
    """Everything an approver shows for a request, in order, escaped and bounded."""
    lines = [Line("title", f"{safe_text(request.tool, 100)} wants to: {safe_text(request.summary, 200)}")]
    command = request.arguments.get("command") if request.tool == "run_shell" else None
    if isinstance(command, str):
        shown = command[:COMMAND_SHOWN_CHARS]
        parts = shown.split("\n")
        for i, part in enumerate(parts[:40]):
            lines.append(Line("command", ("$ " if i == 0 else "> ") + safe_text(part)))
        if len(parts) > 40 or len(command) > COMMAND_SHOWN_CHARS:
            count = command.count("\n") + 1
            lines.append(Line("warning", f"the command is {len(command):,} characters in {count:,} line(s); "
                                         "only the start is shown: deny unless you know what it does"))
    hidden = hidden_characters(command if isinstance(command, str) else request.summary)
    if hidden:
        lines.append(Line("warning", f"contains {hidden} control or invisible character(s), shown escaped "
                                     "(\\x1b, \\r, \\u202e, ...)"))
    danger = request.danger
    lines.append(Line("danger", f"danger: {danger.level}"
                      + (": " + safe_text("; ".join(danger.reasons), 1000) if danger.reasons else "")))
    lines.append(Line("cwd", f"in {safe_text(str(request.cwd), 500)}"))
    lines.append(Line("always", always_line(request)))
    if request.patterns:
        shown = ", ".join(safe_text(p, 200) for p in request.patterns[:10])
        lines.append(Line("never", f"deny always: refuse later commands that run {shown}" if request.tool == "run_shell"
                          else f"deny always: refuse later {safe_text(request.tool, 100)} calls on {shown}"))
    if request.diff:
        diff_lines, note = bounded_lines(request.diff)
        lines += [Line("diff", line) for line in diff_lines]
        if note:
            lines.append(Line("note", note))
    if arguments:
        lines += [Line("arguments", line) for line in arguments_text(request.arguments).split("\n")]
    return lines


def always_line(request) -> str:
    always = getattr(request, "always", None)
    if always:
        return f"allow always: remembers {safe_text(always, 1000)}"
    note = safe_text(getattr(request, "always_note", "") or "", 500)
    return "allow always: not offered" + (f", because {note}" if note else "") + "; allowing applies once only"


def approval_text(request) -> str:
    """The terminal approver's block: every line escaped and bounded."""
    show_arguments = request.tool != "run_shell" and not request.diff
    out = []
    for line in approval_lines(request, arguments=show_arguments):
        if line.kind == "title":
            out.append(f"\n[approval needed] {line.text}")
        elif line.kind == "diff":
            out.append("    " + line.text)
        else:
            out.append("  " + line.text)
    return "\n".join(out)


def approval_prompt(request) -> str:
    if getattr(request, "always", None):
        return "  allow? [y] once / [a] always / [n] no / [d] never: "
    return "  allow? [y] once / [n] no / [d] never ('always' not offered): "
