"""Read-only tools: read_file, list_dir, search_text. Each returns content text or raises ToolError."""
from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from .globs import glob_matches
from .limits import Limits
from .paths import Workspace
from .result import ToolError
from .sniff import SNIFF_BYTES, guess_type, human_size, is_binary

# Directories never descended into when walking (VCS data, caches, virtualenvs).
SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv", ".mypy_cache",
             ".pytest_cache", ".ruff_cache", ".tox"}


def read_file(ws: Workspace, limits: Limits, path: str, start_line: int | None, end_line: int | None) -> str:
    target = ws.resolve(path)
    st = _stat(target.real, path)
    if stat.S_ISDIR(st.st_mode):
        raise ToolError(f"{target.rel!r} is a directory; use list_dir to see its contents")
    if not stat.S_ISREG(st.st_mode):
        raise ToolError(f"{target.rel!r} is not a regular file")
    if start_line and end_line and end_line < start_line:
        raise ToolError(f"end_line ({end_line}) is before start_line ({start_line})")
    first = start_line or 1
    try:
        with open(target.real, "rb") as fh:
            sample = fh.read(SNIFF_BYTES)
            if is_binary(sample):
                kind = guess_type(target.real.name, sample)
                raise ToolError(f"{target.rel!r} is a binary file ({human_size(st.st_size)}, {kind}); not shown")
            fh.seek(0)
            shown, total, truncated = _read_lines(fh, first, end_line, limits, st.st_size)
    except OSError as exc:
        raise ToolError(f"cannot read {target.rel!r}: {exc.strerror or exc}") from None
    if total is not None and first > max(total, 1):
        raise ToolError(f"start_line {first} is past the end of {target.rel!r} ({total} lines)")
    text = "".join(shown)
    last = first + len(shown) - 1
    total_txt = f"{total}" if total is not None else "?"
    sep = "" if text.endswith("\n") or not text else "\n"
    if truncated:
        text += (f"{sep}[truncated at {human_size(limits.read_bytes)}: showed lines {first}-{last} of {total_txt}; "
                 f"use start_line/end_line to read the rest]")
    elif start_line or end_line:
        more = total is None or last < total
        text += f"{sep}[lines {first}-{last} of {total_txt}{'; file continues' if more else ''}]"
    if not shown and not truncated:
        return text or f"[{target.rel} is empty]"
    return text


def _read_lines(fh, first: int, end: int | None, limits: Limits, size: int):
    shown: list[str] = []
    budget = limits.read_bytes
    truncated = False
    count = 0
    for count, raw in enumerate(fh, 1):
        if count < first:
            continue
        if (end is not None and count > end) or truncated:
            if size > limits.count_lines_up_to:
                return shown, None, truncated  # too big to count every line
            continue
        if len(raw) > budget:
            truncated = True
            if not shown:  # a single huge line: show its start rather than nothing
                shown.append(raw[:budget].decode("utf-8", errors="replace"))
            continue
        budget -= len(raw)
        shown.append(raw.decode("utf-8", errors="replace"))
    return shown, count, truncated


def list_dir(ws: Workspace, limits: Limits, path: str, glob: str | None) -> str:
    target = ws.resolve(path)
    st = _stat(target.real, path)
    if not stat.S_ISDIR(st.st_mode):
        raise ToolError(f"{target.rel!r} is not a directory; use read_file for files")
    entries: list[tuple[str, str]] = []  # (relative name, description)
    more = False
    if glob:
        for rel, full in _walk(target.real, limits):
            if glob_matches(glob, rel):
                if len(entries) >= limits.list_entries:
                    more = True
                    break
                entries.append((rel, _describe(full, rel)))
    else:
        try:
            names = sorted(os.listdir(target.real))
        except OSError as exc:
            raise ToolError(f"cannot list {target.rel!r}: {exc.strerror or exc}") from None
        more = len(names) > limits.list_entries
        entries = [(n, _describe(target.real / n, n)) for n in names[:limits.list_entries]]
    entries.sort()
    where = target.rel if target.rel != "." else "workspace root"
    if not entries:
        return f"{where}: no entries" + (f" matching {glob!r}" if glob else "")
    lines = [desc for _, desc in entries]
    if more:
        lines.append(f"[more entries not shown; stopped at {limits.list_entries}; narrow with glob]")
    noun = "entry" if len(entries) == 1 else "entries"
    header = f"{where}: {len(entries)} {noun}" + (f" matching {glob!r}" if glob else "")
    return header + "\n" + "\n".join(lines)


def search_text(ws: Workspace, limits: Limits, pattern: str, path: str, glob: str | None,
                max_results: int | None) -> str:
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        raise ToolError(f"invalid regex {pattern!r}: {exc}") from None
    target = ws.resolve(path)
    st = _stat(target.real, path)
    cap = max_results or limits.search_results
    if stat.S_ISDIR(st.st_mode):
        files = ((rel, full) for rel, full in _walk(target.real, limits) if full.is_file() and not full.is_symlink())
        base = target.rel
    else:
        files = iter([(target.real.name, target.real)])
        base = os.path.dirname(target.rel) or "."
    results: list[str] = []
    skipped = 0
    stopped = False
    for rel, full in files:
        if glob and not glob_matches(glob, rel, basename_if_no_slash=True):
            continue
        shown_path = rel if base == "." else f"{base}/{rel}"
        try:
            if full.stat().st_size > limits.search_file_bytes:
                skipped += 1
                continue
            with open(full, "rb") as fh:
                data = fh.read()
        except OSError:
            skipped += 1
            continue
        if is_binary(data[:SNIFF_BYTES]):
            continue
        for no, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
            if regex.search(line):
                if len(results) >= cap:
                    stopped = True
                    break
                text = line if len(line) <= limits.search_line_chars else line[:limits.search_line_chars] + "…"
                results.append(f"{shown_path}:{no}: {text}")
        if stopped:
            break
    notes = []
    if stopped:
        notes.append(f"[stopped after {cap} matches; narrow the pattern, path or glob]")
    if skipped:
        notes.append(f"[skipped {skipped} unreadable or large (> {human_size(limits.search_file_bytes)}) files]")
    if not results:
        return "\n".join([f"no matches for {pattern!r}"] + notes)
    return "\n".join(results + notes)


def _walk(root: Path, limits: Limits):
    """Yield (posix path relative to root, full path), sorted, not following symlinks, pruning SKIP_DIRS."""
    seen = 0
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        rel_dir = Path(dirpath).relative_to(root).as_posix()
        prefix = "" if rel_dir == "." else rel_dir + "/"
        for name in sorted(dirnames + filenames):
            seen += 1
            if seen > limits.walk_entries:
                return
            yield prefix + name, Path(dirpath) / name


def _describe(full: Path, name: str) -> str:
    try:
        st = full.lstat()
    except OSError:
        return f"{name}  (unreadable)"
    if stat.S_ISLNK(st.st_mode):
        try:
            dest = os.readlink(full)
        except OSError:
            dest = "?"
        return f"{name} -> {dest}  (symlink)"
    if stat.S_ISDIR(st.st_mode):
        return f"{name}/"
    return f"{name}  ({human_size(st.st_size)})"


def _stat(real: Path, raw: str) -> os.stat_result:
    try:
        return real.stat()
    except FileNotFoundError:
        raise ToolError(f"{raw!r} does not exist") from None
    except OSError as exc:
        raise ToolError(f"cannot access {raw!r}: {exc.strerror or exc}") from None
