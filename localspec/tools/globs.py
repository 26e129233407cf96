"""Glob patterns with "**" (any number of directories), compiled to regexes over posix paths.

Why our own: pathlib.Path.glob follows symlinked directories and cannot prune .git while walking.
"""
from __future__ import annotations

import re
from functools import lru_cache


@lru_cache(maxsize=256)
def compile_glob(pattern: str) -> re.Pattern[str]:
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            start = i + 2 if pattern[i + 1:i + 2] in ("!", "^") else i + 1
            end = pattern.find("]", start + 1)  # a "]" right after "[" or "[!" is literal
            if end == -1:
                out.append(re.escape(c))
                i += 1
                continue
            body = pattern[i + 1:end]
            if body[:1] in ("!", "^"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\").replace("[", "\\[") + "]")
            i = end + 1
        else:
            out.append(re.escape(c))
            i += 1
    return re.compile("".join(out) + r"\Z")


def glob_matches(pattern: str, rel_path: str, *, basename_if_no_slash: bool = False) -> bool:
    """Match a posix relative path. With basename_if_no_slash, "*.py" matches at any depth."""
    if basename_if_no_slash and "/" not in pattern:
        rel_path = rel_path.rsplit("/", 1)[-1]
    return compile_glob(pattern).match(rel_path) is not None
