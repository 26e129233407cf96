"""Unified diffs with bounded time and memory, for showing a change before it is made.

Why not plain difflib.unified_diff: its matcher is worse than quadratic on some inputs (4,000 lines
of a few repeated values took 10 s; 250,000 ran for minutes), and it needs every line of both files
as a list. So the common prefix and suffix are cut off on the strings first (linear, no lists), and
only the changed region, with its context lines, is split into lines. A region of at most
limits.diff_lines lines per side goes to difflib; a bigger one is shown as one replaced block
(still a valid unified diff, just not aligned line by line).
"""
from __future__ import annotations

import difflib
import re

from localspec.tools.limits import Limits

CONTEXT = 3
_CHUNK = 1 << 16
_HUNK = re.compile(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@")


def text_diff(rel: str, old: str | None, new: str, limits: Limits) -> tuple[str, int, int]:
    """Unified diff (git style headers) of old -> new; returns (diff, added lines, removed lines)."""
    a_text = "" if old is None else old
    if old is not None and a_text == new:
        return "", 0, 0
    p = _common_prefix(a_text, new)
    s = _common_suffix(a_text, new, min(len(a_text), len(new)) - p)
    start = a_text.rfind("\n", 0, p) + 1  # the line where the first difference is
    pre = 0
    while pre < CONTEXT and start > 0:
        start = a_text.rfind("\n", 0, start - 1) + 1
        pre += 1
    a_end, b_end = len(a_text) - s, len(new) - s
    # Finish the last changed line, then take context lines after it; the tail is the same in both.
    nl = a_text.find("\n", a_end)
    if nl != -1:
        a_end, b_end = nl + 1, b_end + (nl + 1 - a_end)
    else:
        a_end, b_end = len(a_text), len(new)
    post = 0
    while post < CONTEXT and a_end < len(a_text):
        nl = a_text.find("\n", a_end)
        step = (nl + 1 if nl != -1 else len(a_text)) - a_end
        a_end, b_end, post = a_end + step, b_end + step, post + 1
    a = _lines(a_text[start:a_end], at_eof=a_end == len(a_text))
    b = _lines(new[start:b_end], at_eof=b_end == len(new))
    offset = a_text.count("\n", 0, start)
    names = ("/dev/null" if old is None else f"a/{rel}", f"b/{rel}")
    if len(a) <= limits.diff_lines and len(b) <= limits.diff_lines:
        out = [_shift(line, offset) for line in difflib.unified_diff(a, b, *names, n=CONTEXT)]
    else:
        out = _one_block(a, b, names, offset, pre, min(post, len(a) - pre, len(b) - pre))
    added = sum(1 for line in out if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in out if line.startswith("-") and not line.startswith("---"))
    return "".join(out), added, removed


def _one_block(a: list[str], b: list[str], names: tuple[str, str], offset: int, pre: int, post: int) -> list[str]:
    out = [f"--- {names[0]}\n", f"+++ {names[1]}\n",
           f"@@ -{_range(offset, len(a))} +{_range(offset, len(b))} @@\n"]
    out += [" " + line for line in a[:pre]]
    out += ["-" + line for line in a[pre:len(a) - post]]
    out += ["+" + line for line in b[pre:len(b) - post]]
    out += [" " + line for line in a[len(a) - post:]]
    return out


def _range(start: int, length: int) -> str:
    """difflib's unified range format, for a range starting after `start` lines."""
    if length == 1:
        return str(start + 1)
    return f"{start + 1 if length else start},{length}"


def _shift(line: str, offset: int) -> str:
    if not offset or not line.startswith("@@"):
        return line
    m = _HUNK.match(line)
    if not m:
        return line
    return (f"@@ -{int(m.group(1)) + offset}{m.group(2) or ''} +{int(m.group(3)) + offset}{m.group(4) or ''} @@"
            + line[m.end():])


def _lines(text: str, at_eof: bool) -> list[str]:
    # Split on "\n" only (not str.splitlines' \r, \f, \u2028, ...) so hunk line numbers match the file's.
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1] + ("\n\\ No newline at end of file\n" if at_eof else ""))
    return lines


def _common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n:  # compare in chunks: C-speed equality, then one chunk char by char
        j = min(i + _CHUNK, n)
        if a[i:j] != b[i:j]:
            while a[i] == b[i]:
                i += 1
            return i
        i = j
    return n


def _common_suffix(a: str, b: str, most: int) -> int:
    i = 0
    while i < most:
        j = min(i + _CHUNK, most)
        if a[len(a) - j:len(a) - i] != b[len(b) - j:len(b) - i]:
            while a[len(a) - 1 - i] == b[len(b) - 1 - i]:
                i += 1
            return i
        i = j
    return most
