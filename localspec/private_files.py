"""Private folders and files, written without following links: how localspec stores what it keeps for the user.

Why private: conversations hold everything the agent read (file contents, command output), call history holds
what it wrote, MCP logs hold what servers said. With the usual umask they were created 0644 in 0755 folders, so
every local user could read them. So localspec's folders are created 0700 and its files 0600, and folders and
files made by an earlier version are tightened when they are opened (saying so once, on stderr or in the app).

Why no links: a file written where the user says (`sessions export -o /tmp/x.md`) must not be written through a
symbolic link someone else planted there (a dangling link to ~/.bashrc would make the export write the user's
start-up file). So new files are opened O_CREAT|O_EXCL|O_NOFOLLOW, appends O_NOFOLLOW, and a replacement is a
temporary file renamed over the name: rename replaces a link itself, never the file it points to.
"""

from __future__ import annotations

import os
import secrets
import stat
import sys
import threading
from pathlib import Path
from typing import Callable, Iterable

DIR_MODE = 0o700
FILE_MODE = 0o600
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
_APPEND = os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW | _CLOEXEC

_lock = threading.Lock()
_told = False
_tightened: list[str] = []


def _stderr(message: str) -> None:
    try:
        print(message, file=sys.stderr)
    except (OSError, ValueError):
        pass


_report: Callable[[str], None] = _stderr


def set_reporter(report: Callable[[str], None] | None) -> None:
    """Where the one-line notice about tightened permissions goes (the app shows it as a notice); None: stderr."""
    global _report
    _report = report or _stderr


def report(message: str) -> None:
    """One line for the user about their stored files (stderr, or a notice in the app)."""
    _report(message)


def tightened() -> list[str]:
    """Every path whose permissions this process tightened (tests, `doctor`)."""
    with _lock:
        return list(_tightened)


def _note(path: Path, was: int) -> None:
    global _told
    with _lock:
        _tightened.append(str(path))
        first, _told = not _told, True
    if first:  # once per process: an old install has many such files, one line says what happened
        _report(f"localspec: {path} could be read by other users (mode {was:o}); made localspec's folders private "
                f"(0700) and its files 0600")


def tighten(path: Path | str, mode: int | None = None) -> bool:
    """Remove group and other permissions from an existing folder or file of ours (never following a link);
    whether it changed. A missing path, or one we may not change, is left as it is."""
    path = Path(path)
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    if stat.S_ISLNK(st.st_mode) or not (st.st_mode & 0o077):
        return False
    want = mode if mode is not None else (DIR_MODE if stat.S_ISDIR(st.st_mode) else FILE_MODE)
    try:
        os.chmod(path, stat.S_IMODE(st.st_mode) & want)
    except OSError:
        return False
    _note(path, stat.S_IMODE(st.st_mode))
    return True


def private_dir(path: Path | str, *, within: Path | str | None = None, tighten_existing: bool = True) -> Path:
    """Make sure `path` is a folder only its owner can use: missing folders are created 0700 (those above
    `within`, localspec's own folder, with the default mode, as any program creates ~/.local/share), existing ones
    from `within` down to `path` are tightened. tighten_existing=False (a folder the user chose, e.g. for an
    export): only what is created here is private; the user's existing folders keep their permissions."""
    path = Path(path)
    root = Path(within) if within is not None else path
    try:
        path.relative_to(root)
    except ValueError:
        root = path
    if not root.parent.is_dir():
        root.parent.mkdir(parents=True, exist_ok=True)
    chain = [root, *reversed([p for p in path.parents if root in p.parents])] + ([path] if path != root else [])
    for folder in dict.fromkeys(chain):
        try:
            os.mkdir(folder, DIR_MODE)
        except FileExistsError:
            if tighten_existing:
                tighten(folder)
    return path


def _regular(fd: int, path: Path) -> os.stat_result:
    """fstat of an opened descriptor, which must be a regular file (else it is closed and an error raised)."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise OSError(f"{path} is not a regular file")
    return st


def open_append(path: Path | str, *, within: Path | str | None = None, readable: bool = False,
                binary: bool = False):
    """A file opened for appending (text, or bytes with binary=True; readable too with readable=True), created
    0600 in a private folder; never through a symbolic link (O_NOFOLLOW: a link there is an error, ELOOP). An
    existing file that others can read is tightened."""
    path = Path(path)
    private_dir(path.parent, within=within)
    flags = (_APPEND & ~os.O_WRONLY) | (os.O_RDWR if readable else os.O_WRONLY)
    fd = os.open(path, flags | os.O_NONBLOCK, FILE_MODE)  # a FIFO planted there must not block us
    st = _regular(fd, path)
    if st.st_mode & 0o077:
        os.fchmod(fd, stat.S_IMODE(st.st_mode) & FILE_MODE)
        _note(path, stat.S_IMODE(st.st_mode))
    mode = ("a+" if readable else "a") + ("b" if binary else "")
    if binary:
        return os.fdopen(fd, mode)
    return os.fdopen(fd, mode, encoding="utf-8", errors="replace")


def write_new(path: Path | str, data: bytes, mode: int = FILE_MODE) -> None:
    """Create `path` with `data`; FileExistsError when anything (a file, a link, even a dangling one) is there."""
    path = Path(path)
    fd = os.open(path, _NEW, mode)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        _unlink_quietly(path)
        raise


def replace_file(path: Path | str, data: bytes, mode: int | None = FILE_MODE) -> None:
    """Replace `path` atomically with `data`: a temporary file (O_EXCL|O_NOFOLLOW) in the same folder, flushed,
    renamed over the name. A link at `path` is replaced by the file, its target is never written.
    mode None: keep the mode of the regular file being replaced (new files get FILE_MODE)."""
    path = Path(path)
    if mode is None:
        try:
            st = os.stat(path, follow_symlinks=False)
            mode = stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else FILE_MODE
        except OSError:
            mode = FILE_MODE
    tmp = path.with_name(f".{path.name[:180]}.{secrets.token_hex(4)}.tmp")
    write_new(tmp, data, mode)
    try:
        os.chmod(tmp, mode)  # O_CREAT's mode passed through the umask
        os.replace(tmp, path)
    except BaseException:
        _unlink_quietly(tmp)
        raise


def precreate(path: Path | str, *, companions: Iterable[str] = ()) -> None:
    """For a file another library opens by name (SQLite): create it 0600 without following a link, so the library
    finds a private regular file, and tighten it and its companions (`-wal`, `-shm`) if they exist already."""
    path = Path(path)
    fd = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_NONBLOCK | _NOFOLLOW | _CLOEXEC, FILE_MODE)
    _regular(fd, path)
    os.close(fd)
    for name in (path.name, *(path.name + c for c in companions)):
        tighten(path.with_name(name))


def _unlink_quietly(path: Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
