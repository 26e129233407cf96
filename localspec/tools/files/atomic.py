"""Atomic file replacement: temp file in the same directory, fsync, rename over the target, fsync the directory.

Why: a crash or error mid-write must leave either the old file or the new one, never a mix,
and no stray temp files. Everything happens relative to one directory descriptor (openat/renameat/
unlinkat): if the directory is swapped for a symlink meanwhile, the temp file, the rename and any
clean-up still land in the directory that was checked, never somewhere a changed path points to.
"""
from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

from localspec.tools.files.confine import DIR_FLAGS

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_TMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _CLOEXEC


def atomic_write(path: Path, data: bytes) -> None:
    """Replace path with data atomically. Parent directories must already exist."""
    dir_fd = os.open(Path(path).parent, DIR_FLAGS)
    try:
        atomic_write_at(dir_fd, Path(path).name, data)
    finally:
        os.close(dir_fd)


def atomic_write_at(dir_fd: int, name: str, data: bytes) -> None:
    """Replace the entry name in the directory dir_fd with data atomically."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        mode = stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else None  # keep the old permissions
    except FileNotFoundError:
        mode = None
    if mode is None:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, tmp = _make_temp(dir_fd, name)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
            os.fchmod(fh.fileno(), mode)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except FileNotFoundError:
            pass
        raise
    _fsync_dir(dir_fd)


def _make_temp(dir_fd: int, name: str) -> tuple[int, str]:
    stem = name[:180]  # the temp name must stay under NAME_MAX
    while True:
        tmp = f".{stem}.{secrets.token_hex(4)}.tmp"
        try:
            return os.open(tmp, _TMP_FLAGS, 0o600, dir_fd=dir_fd), tmp
        except FileExistsError:
            continue


def _fsync_dir(dir_fd: int) -> None:
    """Persist the rename itself; best effort (some filesystems refuse directory fsync)."""
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
