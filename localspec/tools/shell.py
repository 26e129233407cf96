"""run_shell: /bin/sh -c in the workspace, its own process group, bounded time and output.

Why a new session/process group: on timeout (or when the shell exits leaving background jobs)
we kill the whole group, so `sleep 100 &` cannot outlive the call or hold the output pipe open.
"""
from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

# After the shell exits, how long background children may keep writing before being stopped.
_DRAIN_GRACE_S = 0.2
_TERM_GRACE_S = 0.5


@dataclass
class ShellOutcome:
    output: str
    exit_code: int | None  # None when killed by our timeout
    timed_out: bool
    truncated_bytes: int  # how much output was dropped by the cap
    killed_leftovers: bool  # background processes were still running and got stopped


class _CappedSink:
    """Keeps the first and last cap/2 bytes of a stream; counts what it drops."""

    def __init__(self, cap: int) -> None:
        self.head_cap = cap // 2
        self.tail_cap = cap - self.head_cap
        self.head = bytearray()
        self.tail: deque[bytes] = deque()
        self.tail_len = 0
        self.dropped = 0

    def feed(self, chunk: bytes) -> None:
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self.tail.append(chunk)
        self.tail_len += len(chunk)
        while self.tail_len > self.tail_cap:
            extra = self.tail_len - self.tail_cap
            first = self.tail[0]
            if len(first) <= extra:
                self.tail.popleft()
                self.tail_len -= len(first)
                self.dropped += len(first)
            else:
                self.tail[0] = first[extra:]
                self.tail_len -= extra
                self.dropped += extra

    def text(self) -> str:
        head = bytes(self.head).decode("utf-8", errors="replace")
        tail = b"".join(self.tail).decode("utf-8", errors="replace")
        if self.dropped:
            return f"{head}\n[... {self.dropped} bytes of output omitted ...]\n{tail}"
        return head + tail


def run_shell(command: str, cwd: Path, timeout_s: float, output_cap: int) -> ShellOutcome:
    env = dict(os.environ, PAGER="cat", GIT_PAGER="cat", TERM="dumb", NO_COLOR="1")
    proc = subprocess.Popen(
        ["/bin/sh", "-c", command], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
    )
    sink = _CappedSink(output_cap)
    reader = threading.Thread(target=_pump, args=(proc.stdout, sink), daemon=True)
    reader.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
    except BaseException:  # e.g. KeyboardInterrupt in the UI thread: never leave the group running
        _kill_group(proc.pid)
        proc.wait()
        raise
    leftovers = False
    if timed_out:
        _kill_group(proc.pid)
        proc.wait()
    else:
        reader.join(_DRAIN_GRACE_S)
        # Background children still running (holding the pipe or not) are stopped with the call.
        if reader.is_alive() or _group_alive(proc.pid):
            leftovers = True
            _kill_group(proc.pid)
    reader.join(5)
    return ShellOutcome(sink.text(), None if timed_out else proc.returncode, timed_out, sink.dropped, leftovers)


def _pump(stream, sink: _CappedSink) -> None:
    with stream:
        while True:
            chunk = stream.read1(65536)
            if not chunk:
                return
            sink.feed(chunk)


def _kill_group(pgid: int) -> None:
    """SIGTERM the process group, then SIGKILL whatever is left."""
    try:
        os.killpg(pgid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return
    deadline = time.monotonic() + _TERM_GRACE_S
    while time.monotonic() < deadline:
        if not _group_alive(pgid):
            return
        time.sleep(0.02)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return _has_live_member(pgid)


def _has_live_member(pgid: int) -> bool:
    """killpg(0) also succeeds for zombies; on Linux check /proc for a non-zombie member."""
    proc_dir = Path("/proc")
    if not proc_dir.is_dir():
        return True
    for entry in proc_dir.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat_line = (entry / "stat").read_text()
        except OSError:
            continue
        # Format: pid (comm) state ppid pgrp ...; comm may contain spaces, so split after ")".
        fields = stat_line.rsplit(")", 1)[-1].split()
        if len(fields) >= 3 and fields[2] == str(pgid) and fields[0] != "Z":
            return True
    return False
