"""Atomic file replacement: temp file in the same directory, fsync, os.replace, fsync the directory.

Why: a crash or error mid-write must leave either the old file or the new one, never a mix,
and no stray temp files.
"""
from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path


def atomic_write(path: Path, data: bytes) -> None:
    """Replace path with data atomically. Parent directories must already exist."""
    parent = path.parent
    try:
        mode = stat.S_IMODE(path.stat().st_mode)  # keep the old file's permissions
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, tmp = tempfile.mkstemp(dir=parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    _fsync_dir(parent)


def _fsync_dir(directory: Path) -> None:
    """Persist the rename itself; best effort (some filesystems refuse directory fsync)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
