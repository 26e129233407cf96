"""Finding and stopping what a stdio server left behind.

The SDK closes the server's stdin and kills its process group only if the server itself does not exit in time;
a server that exits cleanly can still leave children running (a launcher's worker, a watcher it started, one that
called setsid). Every server we start carries a marker in its environment, which its descendants inherit, so on
shutdown whatever still carries it is ours to stop. Linux (/proc) only; elsewhere the SDK's own shutdown applies.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from localspec.constants import ENV_MCP_SERVER_MARK

MARKER = ENV_MCP_SERVER_MARK


def marked(token: str, proc: Path = Path("/proc")) -> list[int]:
    """Pids of live processes whose environment holds MARKER=token."""
    needle = f"{MARKER}={token}".encode()
    found = []
    try:
        entries = list(proc.iterdir())
    except OSError:
        return []
    for entry in entries:
        if not entry.name.isdigit():
            continue
        try:
            env = (entry / "environ").read_bytes()
        except OSError:  # gone, or not ours to read
            continue
        if needle in env.split(b"\x00") and not _zombie(entry):
            found.append(int(entry.name))
    return found


def _zombie(entry: Path) -> bool:
    try:
        stat = (entry / "stat").read_text()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[:1] == ["Z"]


def stop_marked(token: str, grace_s: float = 2.0) -> int:
    """SIGTERM every process carrying the marker, SIGKILL the ones still there after `grace_s`; how many were
    found."""
    pids = marked(token)
    for pid in pids:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    left = pids
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [p for p in marked(token) if p in pids]
    for pid in marked(token):
        _signal(pid, signal.SIGKILL)
    return len(pids)


def _signal(pid: int, sig: int) -> None:
    if pid == os.getpid():
        return
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
