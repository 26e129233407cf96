"""Glob patterns with "**" (any number of directories), compiled to RE2 regexes over posix paths.

Why our own: pathlib.Path.glob follows symlinked directories and cannot prune .git while walking.
Why RE2 and collapsed star runs: a glob like "****************z" compiled for a backtracking engine
takes exponential time on a long name; RE2 matches in linear time whatever the pattern.
"""
from __future__ import annotations

import re
from functools import lru_cache

from localspec.tools.files.regex import compile_regex


@lru_cache(maxsize=32)  # few globs per session; each compiled RE2 may hold a DFA cache
def compile_glob(pattern: str):
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*":
            run = i
            while i < n and pattern[i] == "*":
                i += 1
            if i - run == 1:
                out.append("[^/]*")
            elif pattern.startswith("/", i):  # "**/" (or more stars): zero or more whole directories
                out.append("(?:.*/)?")
                i += 1
            else:
                out.append(".*")
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
            negate = body[:1] in ("!", "^")
            if negate:
                body = body[1:]
            body = body.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]").replace("^", "\\^")
            out.append("[" + ("^" if negate else "") + body + "]")
            i = end + 1
        else:
            out.append(re.escape(c))
            i += 1
    return compile_regex("".join(out), what="glob", shown=pattern)


def glob_matches(pattern: str, rel_path: str, *, basename_if_no_slash: bool = False) -> bool:
    """Match a posix relative path. With basename_if_no_slash, "*.py" matches at any depth."""
    if basename_if_no_slash and "/" not in pattern:
        rel_path = rel_path.rsplit("/", 1)[-1]
    return compile_glob(pattern).fullmatch(rel_path) is not None
