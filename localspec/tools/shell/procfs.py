"""Processes as Linux's /proc shows them: state, children, descendants, and the environment marks that let us find
what a command or an MCP server started. One helper for run_shell (tools/shell/execute.py), its wrapper (tools/shell/reaper.py)
and MCP servers (mcp/procs.py).

Why marks: a process that leaves its process group (`setsid cmd &`) is out of reach of a group kill, and one
whose parent died is reparented away from us. Everything we start carries NAME=TOKEN in its environment, which its
descendants inherit, so when the wrapper that tracks them is gone we can still find them (those that cleared their
environment, `env -i`, we cannot: callers say so).

Standard library only, no package-relative imports: reaper.py loads this file while running as `python -I -S`.
"""

from __future__ import annotations

import os
import signal
import time

PROC = "/proc"


def stat(pid: int) -> tuple[int, str, str] | None:
    """(ppid, state, name) of a process, or None when it is gone."""
    try:
        with open(f"{PROC}/{pid}/stat", "rb") as fh:
            raw = fh.read().decode("utf-8", "replace")
    except OSError:
        return None
    # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses, so split at the last ")".
    head, _, rest = raw.rpartition(")")
    fields = rest.split()
    if len(fields) < 2:
        return None
    try:
        ppid = int(fields[1])
    except ValueError:
        return None
    name = "".join(c if c.isprintable() else "?" for c in head.partition("(")[2])[:32]
    return ppid, fields[0], name


def state(pid: int) -> str:
    """The one-letter state ("R", "S", "Z", ...), or "" when the process is gone."""
    info = stat(pid)
    return info[1] if info else ""


def live(pid: int) -> bool:
    """Running or stopped, not a zombie waiting to be reaped."""
    return state(pid) not in ("", "Z", "X")


def group_has_live_member(pgid: int) -> bool:
    """Whether a non-zombie process is in process group `pgid` (killpg(0) also succeeds for zombies)."""
    try:
        entries = os.listdir(PROC)
    except OSError:
        return True
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"{PROC}/{entry}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[-1].split()
        except OSError:
            continue
        if len(fields) >= 3 and fields[2] == str(pgid).encode() and fields[0] != b"Z":
            return True
    return False


def children(pid: int) -> list[int] | None:
    """Direct children from /proc/PID/task/*/children; None where the kernel does not provide that file."""
    try:
        tasks = os.listdir(f"{PROC}/{pid}/task")
    except OSError:
        return []
    kids: list[int] = []
    for task in tasks:
        try:
            with open(f"{PROC}/{pid}/task/{task}/children", "rb") as fh:
                kids += [int(k) for k in fh.read().split()]
        except FileNotFoundError:
            return None if pid == os.getpid() else []
        except OSError:
            continue
    return kids


def children_by_scan() -> dict[int, list[int]]:
    """Every process's children, from one pass over /proc (the fallback)."""
    table: dict[int, list[int]] = {}
    for entry in os.listdir(PROC):
        if entry.isdigit():
            info = stat(int(entry))
            if info:
                table.setdefault(info[0], []).append(int(entry))
    return table


def descendants(root: int, stop_after: int = 0) -> dict[int, str]:
    """Live (non-zombie) descendants of root: pid -> name (only the first stop_after+1 of them if stop_after)."""
    scan = children_by_scan() if children(root) is None else None
    found: dict[int, str] = {}
    todo = list(scan.get(root, []) if scan is not None else children(root) or [])
    while todo:
        pid = todo.pop()
        if pid in found or pid == root:
            continue
        info = stat(pid)
        if info is None:
            continue
        if info[1] not in ("Z", "X"):
            found[pid] = info[2]
            if stop_after and len(found) > stop_after:
                break
        todo.extend(scan.get(pid, []) if scan is not None else children(pid) or [])
    return found


def marked(name: str, token: str) -> list[int]:
    """Pids of live processes (not this one, not zombies) whose environment holds NAME=TOKEN."""
    needle = f"{name}={token}".encode()
    found = []
    try:
        entries = os.listdir(PROC)
    except OSError:
        return []
    me = os.getpid()
    for entry in entries:
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"{PROC}/{entry}/environ", "rb") as fh:
                if needle not in fh.read().split(b"\0"):
                    continue
        except OSError:  # gone, or not ours to read
            continue
        if live(int(entry)):
            found.append(int(entry))
    return found


def stop_marked(name: str, token: str, *, grace_s: float = 0.0, rounds: int = 50) -> tuple[int, list[int]]:
    """Stop every process carrying NAME=TOKEN: SIGTERM and up to `grace_s` to exit, then SIGSTOP and SIGKILL sweeps
    (freezing first, so a forking process cannot outrun them) until none is left. (how many were found, the pids
    still there at the end)."""
    seen: set[int] = set()
    pids = marked(name, token)
    if grace_s > 0 and pids:
        seen.update(pids)
        _send(pids, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while pids and time.monotonic() < deadline:
            time.sleep(0.05)
            pids = marked(name, token)
    for _ in range(rounds):
        if not pids:
            break
        seen.update(pids)
        _send(pids, signal.SIGSTOP)
        _send(pids, signal.SIGKILL)
        time.sleep(0.02)
        pids = marked(name, token)
    return len(seen), pids


def _send(pids: list[int], sig: int) -> None:
    for pid in pids:
        if pid == os.getpid():
            continue
        try:
            os.kill(pid, sig)
        except OSError:
            pass
