"""Untrusted regular expressions, compiled with RE2: matching time is linear in the text, whatever the pattern.

Why RE2: Python's re backtracks, so a pattern like ^(a+)+$ on a long line runs for ever. RE2 has no
backreferences or lookaround (the features that need backtracking); those get a one-line refusal
saying so. Its compiled programs are also capped in memory (max_mem), so no pattern exhausts it.
"""
from __future__ import annotations

import re

import re2

from localspec.tools.tool_result import ToolError

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # RE2 would otherwise print every bad pattern to stderr

_UNSUPPORTED = (
    ("(?=", "lookahead (?=...) is not supported"),
    ("(?!", "negative lookahead (?!...) is not supported"),
    ("(?<=", "lookbehind (?<=...) is not supported"),
    ("(?<!", "negative lookbehind (?<!...) is not supported"),
    ("(?P=", "backreferences (?P=name) are not supported"),
    ("(?>", "atomic groups (?>...) are not supported"),
)


def compile_regex(pattern: str, what: str = "regex", shown: str | None = None):
    """An RE2 pattern object (search/fullmatch like re's), or ToolError with one line saying why not.

    shown: what the user wrote, when pattern was translated from it (a glob).
    """
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        raise ToolError(f"invalid {what} {_short(pattern if shown is None else shown)}: "
                        f"{explain(pattern, exc)}") from None


def explain(pattern: str, exc: Exception) -> str:
    reason = exc.args[0] if exc.args else str(exc)
    if isinstance(reason, bytes):
        reason = reason.decode("utf-8", errors="replace")
    for needle, text in _UNSUPPORTED:
        if needle in pattern:
            return f"{text} (RE2 syntax, matched in linear time)"
    if "invalid escape sequence: \\" in reason and reason[-1:].isdigit():
        return "backreferences like \\1 are not supported (RE2 syntax, matched in linear time)"
    if reason.endswith("\\Z"):
        return "\\Z is not supported; use \\z or $ (RE2 syntax)"
    return str(reason)


def _short(pattern: str) -> str:
    text = repr(pattern)
    return text if len(text) <= 120 else text[:117] + "..."


class LineSearch:
    r"""search_text's matcher: which lines of a file contain a match of pattern (searched line by line).

    Why a whole-file pass first: each call into RE2 from Python costs microseconds, about twenty times
    Python's re on a short line, and most files searched have no match at all. So the lines are joined
    with "\n" and searched once in multi-line mode; only a file with a hit is searched line by line.
    That pass never misses a line's match: "^"/"$" (multi-line) and "\b" see a line's edges the same
    way in both, and RE2 has no lookaround. Only \A, \z and turning multi-line off ("(?-m)") tell a
    line from the text, so patterns with those skip the pass.
    """

    def __init__(self, pattern: str) -> None:
        self.line = compile_regex(pattern)
        self.text = None if re.search(r"\\[Az]|\(\?[a-zA-Z]*-", pattern) else compile_regex("(?m)" + pattern)

    def matches(self, lines: list[str]):
        """Yield (1-based line number, line) for each line with a match."""
        if self.text is not None and self.text.search("\n".join(lines)) is None:
            return
        for no, line in enumerate(lines, 1):
            if self.line.search(line):
                yield no, line
