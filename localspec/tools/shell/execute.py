"""run_shell: /bin/sh -c in the workspace, bounded time and output, a scrubbed environment, and no process left behind.

Why a wrapper (tools/shell/reaper.py) on Linux: a process group kill misses what left the group (`setsid cmd &`,
`setsid -f`, a double fork). The wrapper is a child subreaper, so all of those stay its descendants; it kills
them all when the shell exits (or on a timeout) and reports what it stopped and what it could not. Elsewhere
(macOS) the command runs in its own session and the group is killed, and the result says that processes which
left the group are not tracked.
"""
from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from localspec.constants import ENV_RUN_MARK
from localspec.tools.shell import procfs
from localspec.tools.shell.environ import shell_environment
from localspec.tools.shell.reaper import parse_report

# After the shell exits, how long background children may keep writing before being stopped.
_DRAIN_GRACE_S = 0.2
_TERM_GRACE_S = 0.5
_REAPER = Path(__file__).with_name("reaper.py")
_REAPER_CLEANUP_S = 10.0  # the wrapper's own sweep takes at most about 4 s
_LISTED = 5  # processes named in the result
RUN_MARK = ENV_RUN_MARK


@dataclass
class ShellOutcome:
    output: str
    exit_code: int | None  # None when killed by our timeout
    timed_out: bool
    truncated_bytes: int  # how much output was dropped by the cap
    killed_leftovers: bool  # background processes were still running and got stopped
    leftovers: list[str] = field(default_factory=list)  # "sleep (pid 123)" for what was stopped
    survivors: list[str] = field(default_factory=list)  # what could not be stopped, with why
    tracking: str = "subreaper"  # "subreaper" (every descendant) or "process-group" (fallback)
    removed_env: list[str] = field(default_factory=list)  # secret-looking variables withheld
    too_many: int = 0  # stopped because this many processes ran at once (over the bound): a fork bomb


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


def _use_reaper() -> bool:
    return sys.platform.startswith("linux") and bool(sys.executable) and os.path.isdir("/proc/self") \
        and _REAPER.is_file()


def run_shell(command: str, cwd: Path, timeout_s: float, output_cap: int,
              env_allow: Iterable[str] = (), max_processes: int = 0) -> ShellOutcome:
    env, removed = shell_environment(allow=env_allow)
    # Inherited by everything the command starts: if the wrapper itself is killed (`kill -9 $PPID`), processes
    # that carry this mark can still be found and stopped (those that cleared their environment cannot).
    env[RUN_MARK] = secrets.token_hex(8)
    reaper = _use_reaper()
    report_r = report_w = -1
    argv = ["/bin/sh", "-c", command]
    if reaper:
        report_r, report_w = os.pipe()
        argv = [sys.executable, "-I", "-S", str(_REAPER), str(report_w), str(max(0, int(max_processes))), *argv]
    try:
        proc = subprocess.Popen(
            argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            start_new_session=True, pass_fds=(report_w,) if reaper else (),
        )
    except BaseException:
        if reaper:
            os.close(report_r)
            os.close(report_w)
        raise
    if reaper:
        os.close(report_w)
    sink = _CappedSink(output_cap)
    reader = threading.Thread(target=_pump, args=(proc.stdout, sink), daemon=True)
    reader.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
    except BaseException:  # e.g. KeyboardInterrupt in the UI thread: never leave the command running
        _stop(proc, reaper)
        if reaper:
            os.close(report_r)
        raise
    if reaper:
        return _finish_with_reaper(proc, report_r, reader, sink, timed_out, removed, env[RUN_MARK])
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
    return ShellOutcome(sink.text(), None if timed_out else proc.returncode, timed_out, sink.dropped, leftovers,
                        ["processes in the command's process group"] if leftovers else [],
                        tracking="process-group", removed_env=removed)


def _finish_with_reaper(proc, report_r: int, reader, sink, timed_out: bool, removed: list[str],
                        mark: str) -> ShellOutcome:
    if timed_out:
        proc.send_signal(signal.SIGTERM)  # the wrapper stops the shell and everything it started
    try:
        proc.wait(timeout=_REAPER_CLEANUP_S)
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        proc.wait()
    report = _read_report(report_r)
    if "exit" not in report:  # the wrapper died without reporting: fall back to the groups, and say we could not check
        _kill_group(proc.pid)
        if report.get("shell"):
            _kill_group(int(report["shell"]))
        found = _kill_marked(mark)
        reader.join(1)
        why = (f"unknown: the process tracker was stopped or failed; {found} process(es) found by their environment "
               "were killed, but any that cleared their environment may still run")
        return ShellOutcome(sink.text(), None if timed_out else proc.returncode, timed_out, sink.dropped,
                            timed_out or found > 0, [], [why], tracking="process-group", removed_env=removed)
    survivors = list(report.get("survivors", []))
    extra = int(report.get("survivor_count", len(survivors))) - len(survivors)
    if extra > 0:
        survivors.append(f"and {extra} more")
    leftovers = list(report.get("leftovers", []))
    extra = int(report.get("leftover_count", len(leftovers))) - len(leftovers)
    if extra > 0:
        leftovers.append(f"and {extra} more")
    exit_code = report.get("exit")
    too_many = int(report.get("too_many") or 0)
    timed_out = exit_code is None and not too_many and (timed_out or bool(report.get("stopped_early")))
    reader.join(1 if survivors else 5)
    return ShellOutcome(sink.text(), exit_code, timed_out, sink.dropped, bool(leftovers), leftovers, survivors,
                        tracking="subreaper" if report.get("subreaper") else "process-group", removed_env=removed,
                        too_many=too_many)


def _kill_marked(mark: str) -> int:
    """SIGSTOP then SIGKILL every process carrying this call's mark, until none is left; how many were found."""
    found, _ = procfs.stop_marked(RUN_MARK, mark)
    return found


def _read_report(fd: int) -> dict:
    """The wrapper's "key<TAB>value" lines as {"exit": int|None, "leftovers": [...], "survivors": [...], ...}."""
    chunks = []
    try:
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
    except OSError:
        pass
    finally:
        os.close(fd)
    return parse_report(b"".join(chunks).decode("utf-8", "replace"))


def _stop(proc: subprocess.Popen, reaper: bool) -> None:
    """Interrupted while waiting: stop the command now (through the wrapper when there is one)."""
    if reaper:
        try:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=_REAPER_CLEANUP_S)
            return
        except subprocess.TimeoutExpired:
            pass
    _kill_group(proc.pid)
    proc.wait()


def process_notes(out: ShellOutcome) -> str:
    """Lines for the tool result: what was stopped, what could not be, and what this system cannot track."""
    notes = ""
    if out.killed_leftovers and not out.timed_out:
        named = ", ".join(out.leftovers[:_LISTED]) + (" ..." if len(out.leftovers) > _LISTED else "")
        notes += f"\n[background processes still running after the command exited were stopped: {named}]"
    if out.survivors:
        notes += (f"\n[could not stop {len(out.survivors)} process(es) the command started; they may still be "
                  f"running: {'; '.join(out.survivors[:_LISTED])}]")
    if out.tracking != "subreaper" and (out.killed_leftovers or out.timed_out):
        notes += ("\n[note: this system can only stop the command's process group; processes that started their own "
                  "session (setsid) or daemonized are not tracked and may still run]")
    return notes


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
    return procfs.group_has_live_member(pgid)
