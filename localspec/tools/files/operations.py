"""Read-only tools: read_file, list_dir, search_text. Each returns content text or raises ToolError.

Everything is opened through the workspace's descriptors (paths.Workspace.open, walk()), never by
a path name that could change under us, and only regular files are ever read. Memory stays bounded
by Limits whatever the file: lines are read in capped pieces, searched files are read up to a cap.
"""
from __future__ import annotations

import os
import stat
from contextlib import closing

from localspec.tools.files.confine import DIR_FLAGS, Resolved, Workspace, file_kind, open_entry
from localspec.tools.files.globs import compile_glob, glob_matches
from localspec.tools.files.regex import LineSearch
from localspec.tools.files.sniff import SNIFF_BYTES, guess_type, human_size, is_binary
from localspec.tools.limits import Limits
from localspec.tools.safety.display import safe_text
from localspec.tools.tool_result import ToolError

# Directories never descended into when walking (VCS data, caches, virtualenvs).
SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv", ".mypy_cache",
             ".pytest_cache", ".ruff_cache", ".tox"}

_CHUNK = 64 * 1024


def read_file(ws: Workspace, limits: Limits, path: str, start_line: int | None, end_line: int | None) -> str:
    target = ws.resolve(path)
    if start_line and end_line and end_line < start_line:
        raise ToolError(f"end_line ({end_line}) is before start_line ({start_line})")
    fd, st = ws.open(target)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        if stat.S_ISDIR(st.st_mode):
            raise ToolError(f"{target.rel!r} is a directory; use list_dir to see its contents")
        raise ToolError(f"{target.rel!r} is {file_kind(st.st_mode)}, not a regular file; not read")
    with os.fdopen(fd, "rb") as fh:
        first = start_line or 1
        try:
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
    for count, (head, length) in enumerate(capped_lines(fh, limits.read_bytes + 1), 1):
        if count < first:
            continue
        if (end is not None and count > end) or truncated:
            if size > limits.count_lines_up_to:
                return shown, None, truncated  # too big to count every line
            continue
        if length > budget:
            truncated = True
            if not shown:  # a single huge line: show its start rather than nothing
                shown.append(head[:budget].decode("utf-8", errors="replace"))
            continue
        budget -= length
        shown.append(head.decode("utf-8", errors="replace"))
    return shown, count, truncated


def capped_lines(fh, cap: int):
    """Yield (first cap bytes of each line, the line's full length): a 300 MiB line costs cap bytes, not 300 MiB."""
    while True:
        head = fh.readline(cap)
        if not head:
            return
        length = len(head)
        if len(head) == cap and not head.endswith(b"\n"):
            while True:  # skip the rest of a long line in bounded pieces
                more = fh.readline(_CHUNK)
                length += len(more)
                if not more or more.endswith(b"\n"):
                    break
        yield head, length


def list_dir(ws: Workspace, limits: Limits, path: str, glob: str | None) -> str:
    target = ws.resolve(path)
    matcher = compile_glob(glob) if glob else None  # a bad glob is refused before touching the disk
    fd = _open_dir(ws, target, "not a directory; use read_file for files")
    entries: list[tuple[str, str]] = []  # (relative name, description)
    more = False
    try:
        if matcher is not None:
            with closing(walk(fd, limits)) as found:
                for rel, dir_fd, name, _ in found:
                    if matcher.fullmatch(rel) is not None:
                        if len(entries) >= limits.list_entries:
                            more = True
                            break
                        entries.append((rel, _describe(dir_fd, name, rel)))
        else:
            try:
                with os.scandir(fd) as it:
                    names = sorted(entry.name for entry in it)
            except OSError as exc:
                raise ToolError(f"cannot list {target.rel!r}: {exc.strerror or exc}") from None
            more = len(names) > limits.list_entries
            entries = [(n, _describe(fd, n, n)) for n in names[:limits.list_entries]]
    finally:
        os.close(fd)
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
    search = LineSearch(pattern)
    if glob:
        compile_glob(glob)  # refuse a bad glob up front, with its own message
    target = ws.resolve(path)
    cap = max_results or limits.search_results
    fd, st = ws.open(target)
    results: list[str] = []
    skipped = 0
    stopped = False
    try:
        if stat.S_ISDIR(st.st_mode):
            files = _files_under(fd, limits)
            base = target.rel
        elif stat.S_ISREG(st.st_mode):
            files = _single((target.real.name, None, None, (fd, st)))
            base = os.path.dirname(target.rel) or "."
        else:
            raise ToolError(f"{target.rel!r} is {file_kind(st.st_mode)}, not a regular file; not searched")
        with closing(files):
            for rel, dir_fd, name, opened in files:
                if glob and not glob_matches(glob, rel, basename_if_no_slash=True):
                    continue
                shown_path = rel if base == "." else f"{base}/{rel}"
                data = _read_for_search(dir_fd, name, opened, limits)
                if data is None:
                    skipped += 1
                    continue
                if is_binary(data[:SNIFF_BYTES]):
                    continue
                for no, line in search.matches(data.decode("utf-8", errors="replace").splitlines()):
                    if len(results) >= cap:
                        stopped = True
                        break
                    text = line if len(line) <= limits.search_line_chars else line[:limits.search_line_chars] + "…"
                    results.append(f"{safe_text(shown_path)}:{no}: {text}")
                if stopped:
                    break
    finally:
        os.close(fd)
    notes = []
    if stopped:
        notes.append(f"[stopped after {cap} matches; narrow the pattern, path or glob]")
    if skipped:
        notes.append(f"[skipped {skipped} unreadable, special or large (> {human_size(limits.search_file_bytes)}) "
                     "files]")
    if not results:
        return "\n".join([f"no matches for {pattern!r}"] + notes)
    return "\n".join(results + notes)


def _single(item):
    yield item


def _files_under(fd: int, limits: Limits):
    with closing(walk(fd, limits)) as found:
        for rel, dir_fd, name, entry in found:
            try:
                if entry.is_file(follow_symlinks=False):
                    yield rel, dir_fd, name, None
            except OSError:
                continue


def _read_for_search(dir_fd: int | None, name: str | None, opened, limits: Limits) -> bytes | None:
    """At most search_file_bytes of a regular file, or None (skip: too big, special, gone, unreadable)."""
    if opened is None:
        assert dir_fd is not None and name is not None  # the walk names every entry it did not open
        try:
            opened = open_entry(dir_fd, name, missing_ok=True)
        except (ToolError, OSError):
            return None
        if opened is None:
            return None
        close = True
    else:
        close = False  # the caller's descriptor
    fd, st = opened
    try:
        # fstat of what was opened, not a stat by name: the entry may have been swapped meanwhile.
        if not stat.S_ISREG(st.st_mode) or st.st_size > limits.search_file_bytes:
            return None
        data = os.pread(fd, limits.search_file_bytes + 1, 0)
        return None if len(data) > limits.search_file_bytes else data
    except OSError:
        return None
    finally:
        if close:
            os.close(fd)


def walk(fd: int, limits: Limits):
    """Yield (posix path relative to fd's directory, parent dir fd, name, DirEntry) for everything under fd.

    Sorted per directory, never following symlinks (each directory is opened O_NOFOLLOW relative to
    its parent's descriptor), pruning SKIP_DIRS, stopping after limits.walk_entries entries and below
    limits.walk_depth. The parent descriptor is valid only until the next item is asked for.
    """
    seen = [0]

    def visit(dir_fd: int, prefix: str, depth: int):
        try:
            with os.scandir(dir_fd) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            return
        subdirs = []
        for entry in entries:
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
                if entry.name in SKIP_DIRS and entry.is_dir():
                    continue
            except OSError:
                is_dir = False
            seen[0] += 1
            if seen[0] > limits.walk_entries:
                raise _Stop
            yield prefix + entry.name, dir_fd, entry.name, entry
            if is_dir:
                subdirs.append(entry.name)
        if depth >= limits.walk_depth:
            return
        for name in subdirs:
            try:
                sub = os.open(name, DIR_FLAGS, dir_fd=dir_fd)
            except OSError:
                continue  # gone, or swapped for a symlink/file since it was listed
            try:
                yield from visit(sub, prefix + name + "/", depth + 1)
            finally:
                os.close(sub)

    try:
        yield from visit(fd, "", 1)
    except _Stop:
        return


class _Stop(Exception):
    pass


def _describe(dir_fd: int, name: str, shown: str) -> str:
    """One listing line. Names are escaped (safe_text): a file named "a\\n b -> /etc  (symlink)" or holding
    terminal escapes must not forge listing lines or reach a terminal that shows the result."""
    shown = safe_text(shown)
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return f"{shown}  (unreadable)"
    if stat.S_ISLNK(st.st_mode):
        try:
            dest = os.readlink(name, dir_fd=dir_fd)
        except OSError:
            dest = "?"
        return f"{shown} -> {safe_text(dest)}  (symlink)"
    if stat.S_ISDIR(st.st_mode):
        return f"{shown}/"
    if not stat.S_ISREG(st.st_mode):
        return f"{shown}  ({file_kind(st.st_mode).removeprefix('a ')})"
    return f"{shown}  ({human_size(st.st_size)})"


def _open_dir(ws: Workspace, target: Resolved, not_dir_hint: str) -> int:
    fd, st = ws.open(target)
    if not stat.S_ISDIR(st.st_mode):
        os.close(fd)
        raise ToolError(f"{target.rel!r} is {not_dir_hint}")
    return fd
