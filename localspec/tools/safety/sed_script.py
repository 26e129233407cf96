"""What a sed script can do besides editing its stream: run commands (the `e` command, the `s///e` flag) and write
files (`w`/`W`, the `s///w FILE` flag). Read command by command, as GNU sed reads them (addresses, ranges, `!`,
blocks, labels, text and file arguments to the end of the line, any delimiter for `s` and `y`); a script it cannot
read is reported as such (None), and the rating errs high.
"""
from __future__ import annotations

import re

_SED_PLAIN = set("=dDgGhHlnNpPxzFqQ")  # commands that only edit the stream (q and Q may take an exit code)
_SED_LABEL = set("btT:")
_SED_TEXT = set("aic")
_SED_FILE = set("rRwW")


def sed_effects(script: str) -> tuple[bool, list[str]] | None:
    """(whether a sed script runs commands, the files it writes); None when it cannot be read (over-report)."""
    runs, writes = False, []
    i, n = 0, len(script)
    while i < n:
        c = script[i]
        if c in " \t\n;}":
            i += 1
            continue
        if c == "#":
            i = _line_end(script, i)
            continue
        i = _sed_address(script, i)
        if i >= n:
            return None
        c = script[i]
        if c == "{":
            i += 1
        elif c in _SED_PLAIN:
            i += 1
            while i < n and script[i].isdigit():
                i += 1
        elif c in _SED_LABEL:
            i = _line_end(script, i, stop=";")
        elif c in _SED_TEXT:
            i = _line_end(script, i)
        elif c in _SED_FILE:
            end = _line_end(script, i)
            if c in "wW":
                writes.append(script[i + 1:end].strip())
            i = end
        elif c == "e":
            runs, i = True, _line_end(script, i)
        elif c in "sy":
            parsed = _sed_substitute(script, i)
            if parsed is None:
                return None
            i, flags, target = parsed
            runs = runs or (c == "s" and "e" in flags)
            if target is not None:
                writes.append(target)
        elif c == "v":
            i = _line_end(script, i, stop=";")
        else:
            return None
    return runs, writes


def _line_end(script: str, i: int, stop: str = "") -> int:
    while i < len(script) and script[i] != "\n" and script[i] not in stop:
        i += 1
    return i


_ADDRESS = re.compile(r"\s*(?:\d+(?:~\d+)?|\$|/(?:[^/\\\n]|\\.)*/[IM]*|\\(.)(?:(?!\1)[^\\\n]|\\.)*\1[IM]*)")


def _sed_address(script: str, i: int) -> int:
    """Past the address (none, one, or a range) and a `!`, at the command letter."""
    m = _ADDRESS.match(script, i)
    if m:
        i = m.end()
        rest = re.match(r"\s*,\s*(?:[+~]\d+|\d+|\$|/(?:[^/\\\n]|\\.)*/[IM]*|\\(.)(?:(?!\1)[^\\\n]|\\.)*\1[IM]*)",
                        script[i:])
        if rest:
            i += rest.end()
    while i < len(script) and script[i] in " \t!":
        i += 1
    return i


def _sed_substitute(script: str, i: int) -> tuple[int, str, str | None] | None:
    """s/RE/REPL/FLAGS or y/A/B/ from script[i]: (where it ends, its flags, the file a w flag writes or None)."""
    letter, i = script[i], i + 1
    if i >= len(script) or script[i] in "\n\\":
        return None
    delim = script[i]
    i += 1
    for _ in range(2):
        while i < len(script) and script[i] != delim:
            i += 2 if script[i] == "\\" else 1
        if i >= len(script):
            return None
        i += 1
    if letter == "y":
        return i, "", None
    start = i
    while i < len(script) and script[i] not in ";\n}" and script[i] != "w":
        if not (script[i].isdigit() or script[i] in "gpiImMe "):
            return None
        i += 1
    flags = script[start:i]
    if i < len(script) and script[i] == "w":
        end = _line_end(script, i)
        return end, flags + "w", script[i + 1:end].strip()
    return i, flags, None
