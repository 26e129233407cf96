"""Confinement: every path a tool touches must resolve inside the workspace, and stay inside while it is used.

Two steps. resolve() checks a path by name (realpath, then a containment check) so a refusal can say
why: "..", an absolute path, a symlink that points out. A check by name alone races, though: between
the check and the open, a shell command the agent started (or any other process) can swap a
directory for a symlink to somewhere else. So every open then walks from the workspace root's
descriptor one component at a time (openat with O_NOFOLLOW) along the already-resolved path: a
symlink that appears after the check makes the open fail instead of being followed, and nothing
is ever reopened by a path that may have changed. FIFOs, sockets and devices are refused before
opening; final components are opened O_NONBLOCK and fstat'ed all the same (that look races too), so
a FIFO can never block the agent.
"""
from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, overload

from localspec.tools.tool_result import ToolError

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOCTTY = getattr(os, "O_NOCTTY", 0)
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC
# No O_DIRECTORY: the caller decides from fstat what it may do with the entry.
ENTRY_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC | _NOCTTY


@dataclass(frozen=True)
class Resolved:
    real: Path  # absolute, symlinks resolved (at check time)
    rel: str  # workspace-relative, posix style ("." for the root), for messages
    raw: str = ""  # what the caller asked for, for messages

    @property
    def parts(self) -> list[str]:
        return [] if self.rel == "." else self.rel.split("/")


class Workspace:
    def __init__(self, root: Path | str) -> None:
        real = os.path.realpath(os.fspath(root))
        if not os.path.isdir(real):
            raise ValueError(f"workspace {os.fspath(root)!r} is not an existing directory")
        self.root = Path(real)
        st = os.stat(real)
        self._root_id = (st.st_dev, st.st_ino)

    def contains(self, real: str | Path) -> bool:
        real = os.fspath(real)
        root = os.fspath(self.root)
        return real == root or real.startswith(root.rstrip(os.sep) + os.sep)

    def rel(self, real: str | Path) -> str:
        rel = os.path.relpath(os.fspath(real), self.root)
        return Path(rel).as_posix()

    def resolve(self, raw: str) -> Resolved:
        """Resolve a user/model-supplied path; raise ToolError if it is outside the workspace."""
        if not isinstance(raw, str) or not raw.strip():
            raise ToolError("path is empty")
        if "\x00" in raw:
            raise ToolError("path contains a NUL byte")
        if raw.startswith("~"):
            raise ToolError(f"path {raw!r} refers to a home directory outside the workspace; "
                            "use a workspace-relative path")
        joined = raw if os.path.isabs(raw) else os.path.join(self.root, raw)
        try:
            real = os.path.realpath(joined)
            parent = os.path.realpath(os.path.dirname(real))
        except OSError as exc:  # e.g. a symlink replaced between realpath's lstat and readlink
            raise ToolError(f"path {raw!r} changed while it was being checked ({exc.strerror or exc}); "
                            "try again") from None
        if not self.contains(real):
            lexical = os.path.normpath(joined)
            if self.contains(lexical):
                raise ToolError(f"path {raw!r} goes through a symlink that points outside the workspace")
            raise ToolError(f"path {raw!r} is outside the workspace; use a path inside {self.root}")
        # A new file's parent must be inside too (realpath already resolved it; this guards oddities).
        if real != os.fspath(self.root) and not self.contains(parent):
            raise ToolError(f"path {raw!r} has a parent directory outside the workspace")
        return Resolved(real=Path(real), rel=self.rel(real), raw=raw)

    # --- opening by descriptor -----------------------------------------------------------------

    def open_root(self) -> int:
        """A descriptor of the workspace root, refused if the root was moved or replaced since start."""
        try:
            fd = os.open(self.root, DIR_FLAGS)
        except OSError as exc:
            raise ToolError(f"cannot open the workspace {os.fspath(self.root)!r}: {exc.strerror or exc}") from None
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != self._root_id:
            os.close(fd)
            raise ToolError(f"the workspace directory {os.fspath(self.root)!r} was moved or replaced; "
                            "restart in the workspace you mean")
        return fd

    @overload
    def open_parent(self, target: Resolved, *, create: Literal[True]) -> tuple[int, str]: ...
    @overload
    def open_parent(self, target: Resolved, *, create: bool = False) -> tuple[int, str] | None: ...

    def open_parent(self, target: Resolved, *, create: bool = False) -> tuple[int, str] | None:
        """(descriptor of target's parent directory, final name). None if a parent is missing and not create.

        With create, missing directories are made one by one with mkdirat, each then opened no-follow.
        """
        parts = target.parts
        if not parts:
            raise ToolError("the workspace root itself cannot be used as a file")
        fd = self.open_root()
        for name in parts[:-1]:
            step = self._step(fd, name, target, create)  # closes the previous descriptor, whatever happens
            if step is None:
                return None
            fd = step
        return fd, parts[-1]

    @overload
    def open(self, target: Resolved, *, missing_ok: Literal[False] = False) -> tuple[int, os.stat_result]: ...
    @overload
    def open(self, target: Resolved, *, missing_ok: bool) -> tuple[int, os.stat_result] | None: ...

    def open(self, target: Resolved, *, missing_ok: bool = False) -> tuple[int, os.stat_result] | None:
        """Open the target itself (file, directory or other) without following symlinks or blocking.

        Returns (fd, fstat of that fd); the caller checks the type. None when it does not exist and missing_ok.
        """
        if not target.parts:
            fd = self.open_root()
            return fd, os.fstat(fd)
        opened = self.open_parent(target)
        if opened is None:
            if missing_ok:
                return None
            raise ToolError(f"{target.raw or target.rel!r} does not exist")
        dir_fd, name = opened
        try:
            return open_entry(dir_fd, name, target, missing_ok=missing_ok)
        finally:
            os.close(dir_fd)

    def _step(self, dir_fd: int, name: str, target: Resolved, create: bool) -> int | None:
        """Open directory name under dir_fd, closing dir_fd; None if it is missing and not create."""
        try:
            try:
                return os.open(name, DIR_FLAGS, dir_fd=dir_fd)
            except FileNotFoundError:
                if not create:
                    return None
            try:
                os.mkdir(name, 0o777, dir_fd=dir_fd)
            except FileExistsError:
                pass  # made meanwhile: opened no-follow below like any other
            return os.open(name, DIR_FLAGS, dir_fd=dir_fd)
        except OSError as exc:
            raise ToolError(_why_not_opened(dir_fd, name, target, exc, want_dir=True)) from None
        finally:
            os.close(dir_fd)


def open_entry(dir_fd: int, name: str, target: Resolved | None = None, *,
               missing_ok: bool = False) -> tuple[int, os.stat_result] | None:
    """Open name under dir_fd: no symlink following, no blocking (FIFOs), no controlling terminal."""
    shown = (target.raw or target.rel) if target else name
    try:
        mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
    except OSError:
        mode = 0  # let the open below report it
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        # Not even opened: opening a device can have effects. The caller's fstat still checks what was opened.
        raise ToolError(f"{shown!r} is {file_kind(mode)}, not a regular file; not opened")
    try:
        fd = os.open(name, ENTRY_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        if missing_ok:
            return None
        raise ToolError(f"{shown!r} does not exist") from None
    except OSError as exc:
        raise ToolError(_why_not_opened(dir_fd, name, target, exc, want_dir=False)) from None
    try:
        return fd, os.fstat(fd)
    except OSError:
        os.close(fd)
        raise


def _why_not_opened(dir_fd: int, name: str, target: Resolved | None, exc: OSError, *, want_dir: bool) -> str:
    shown = target.rel if target else name
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        st = None
    # ELOOP is what O_NOFOLLOW gives for a symlink (EMLINK on FreeBSD), even if it is gone again by the lstat.
    if exc.errno in (errno.ELOOP, errno.EMLINK) or (st is not None and stat.S_ISLNK(st.st_mode)):
        if _loops(dir_fd, name):
            return f"{shown!r} is or goes through a symlink loop"
        # resolve() already followed every symlink that was there; one here appeared after the check.
        return (f"{shown!r} changed while it was being opened (a symlink appeared in its path); "
                "not followed, try again")
    if want_dir and exc.errno == errno.ENOTDIR:
        return f"{shown!r}: {name!r} is not a directory"
    if exc.errno == errno.ENXIO or (st is not None and stat.S_ISSOCK(st.st_mode)):
        return f"{shown!r} is not a regular file (a socket or device)"
    return f"cannot open {shown!r}: {exc.strerror or exc}"


def _loops(dir_fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd)
    except OSError as exc:
        return exc.errno == errno.ELOOP
    return False


def file_kind(mode: int) -> str:
    """'a FIFO', 'a socket', ... for refusal messages about non-regular files."""
    for test, label in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                        (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                        (stat.S_ISDIR, "a directory"), (stat.S_ISLNK, "a symlink")):
        if test(mode):
            return label
    return "not a regular file"
