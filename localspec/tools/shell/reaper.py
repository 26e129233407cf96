"""Runs one shell command and stops every process it started, even those that left its process group.

Usage (by tools/shell/execute.py and mcp/connection.py, as a file, with only the standard library and procfs.py):
    python -I -S reaper.py REPORT MAX_PROCESSES PROGRAM [ARGS...]      (run_shell: /bin/sh -c COMMAND)

REPORT is a file descriptor number (run_shell passes a pipe), or the path of a file the caller created (MCP
servers are started by the SDK, which passes no extra descriptors).

Why a separate process: Linux reparents an orphan to its nearest ancestor marked "child subreaper"
(prctl PR_SET_CHILD_SUBREAPER). Marking this small wrapper, not the agent itself, means `setsid cmd &`,
`setsid -f` and double forks stay its descendants, so once the shell exits (or the caller sends SIGTERM on a
timeout) it can find them all in /proc and kill them, and the agent's own process keeps its normal children.
The result goes to REPORT_FD as "key<TAB>value" lines (no json import: it would double our start-up time):
exit status, what had to be stopped, what could not be.

MAX_PROCESSES bounds a fork bomb: while the shell runs, the wrapper counts its live descendants (on every child
event and at least every CHECK_S) and stops everything once more than MAX_PROCESSES run at once (0: no bound).
An rlimit would not do: RLIMIT_NPROC counts all the user's processes and does not apply to root.
"""
from __future__ import annotations

import ctypes
import os
import signal
import sys
import time

if __package__:  # imported as localspec.tools.shell.reaper (tests)
    from localspec.tools.shell import procfs
else:  # run as a file under `python -I -S`: the standard library, and the /proc helper beside this file
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import procfs  # type: ignore[no-redef]  # the same module, found as a file

descendants = procfs.descendants

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
DRAIN_GRACE_S = 0.2  # after the shell exits, how long background children may finish on their own
TERM_GRACE_S = 0.5  # between SIGTERM and SIGKILL
KILL_ROUNDS_S = 3.0
MAX_LISTED = 20  # how long to keep sweeping (a fork loop keeps making new processes)
CHECK_S = 0.1  # how often the number of processes is checked while the shell runs


class _Stop(Exception):
    """The caller asked us to stop (timeout or interrupt)."""


def _on_stop(signum, frame):
    raise _Stop()


def set_subreaper() -> str:
    """'' on success, else why not."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            return os.strerror(ctypes.get_errno())
        # If the agent dies mid-command, SIGTERM us so the cleanup below still runs.
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    except (OSError, AttributeError) as exc:
        return str(exc)
    return ""


def reap(statuses: dict[int, int], at_most: int = 2000) -> None:
    """Collect exited children (our own and reparented orphans), keeping their statuses.

    At most `at_most` per call: a fork loop whose orphans exit as fast as we collect them must not keep us
    here (we would never get to count or stop it)."""
    for _ in range(at_most):
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        statuses[pid] = status


def _signal(pid: int, sig: int, failed: dict[int, str]) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass
    except PermissionError:
        failed[pid] = "permission denied"


def stop_all(me: int, statuses: dict[int, int], *, kill=_signal, scan=descendants,
             term_grace: float = TERM_GRACE_S, rounds_s: float = KILL_ROUNDS_S) -> dict[int, str]:
    """SIGTERM every descendant, then SIGSTOP+SIGKILL sweeps until none is left. Returns survivors: pid -> why."""
    failed: dict[int, str] = {}
    for pid in scan(me):
        kill(pid, signal.SIGTERM, failed)
    deadline = time.monotonic() + term_grace
    while scan(me) and time.monotonic() < deadline:
        reap(statuses)
        time.sleep(0.02)
    deadline = time.monotonic() + rounds_s
    while True:
        reap(statuses)
        live = scan(me)
        if not live or time.monotonic() > deadline:
            break
        for pid in live:  # freeze first, so a forking process cannot outrun the sweep
            kill(pid, signal.SIGSTOP, failed)
        for pid in scan(me):
            kill(pid, signal.SIGKILL, failed)
        time.sleep(0.02)
    live = scan(me)
    return {pid: f"{name} (pid {pid}): {failed.get(pid, 'still running after SIGKILL')}" for pid, name in live.items()}


def _wait_for(shell: int, statuses: dict[int, int], me: int, max_processes: int, report: dict) -> None:
    """Wait until the shell exits, reaping orphans; stop early (raise _Stop) past max_processes descendants."""
    while True:
        reap(statuses)
        if shell in statuses:
            return
        signal.sigtimedwait([signal.SIGCHLD], CHECK_S)  # SIGCHLD is blocked: it waits here, no handler runs
        _check_count(me, max_processes, report)


def _check_count(me: int, max_processes: int, report: dict) -> None:
    if max_processes:
        count = len(descendants(me, stop_after=max_processes))
        if count > max_processes:
            report["too_many"] = count
            raise _Stop()


def _freeze_group(pgid: int) -> None:
    """Stop, then kill, every process still in a process group: one system call each, faster than any fork loop."""
    for sig in (signal.SIGSTOP, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except OSError:
            pass


def parse_report(text: str) -> dict:
    """The report's "key<TAB>value" lines as {"exit": int|None, "leftovers": [...], "survivors": [...], ...}
    ({} when it is damaged). "exit" is written last: a report without it is from a wrapper that did not finish."""
    report: dict = {"leftovers": [], "survivors": []}
    for line in text.splitlines():
        key, _, value = line.partition("\t")
        if key in ("leftover", "survivor"):
            report[key + "s"].append(value)
        elif key in ("exit", "leftover_count", "survivor_count", "subreaper", "stopped_early", "too_many", "shell"):
            try:
                report[key] = None if value == "none" else int(value)
            except ValueError:
                return {}
        elif key == "error":
            report[key] = value
    return report


def main(argv: list[str]) -> int:
    report_fd = int(argv[0]) if argv[0].isdigit() else \
        os.open(argv[0], os.O_WRONLY | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0))
    max_processes = int(argv[1])
    command = argv[2:]
    os.set_inheritable(report_fd, False)
    report: dict = {"subreaper": 0, "exit": "none", "stopped_early": 0}
    me = os.getpid()
    statuses: dict[int, int] = {}
    shell = -1
    try:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, _on_stop)
        why = set_subreaper()
        report["subreaper"] = 0 if why else 1
        if why:
            report["error"] = f"could not become a child subreaper: {why}"
        signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGCHLD])
        # The shell starts with no blocked signals and default handlers, whatever ours are.
        # Its own process group (setpgroup=0), so one killpg can freeze a fork bomb that stayed in it at once.
        shell = os.posix_spawn(command[0], command, dict(os.environ), setsigmask=(), setpgroup=0,
                               setsigdef=(signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGCHLD))
        os.write(report_fd, f"shell\t{shell}\n".encode())  # lets the caller kill the group if we are killed
        _wait_for(shell, statuses, me, max_processes, report)
        report["exit"] = os.waitstatus_to_exitcode(statuses[shell])
        deadline = time.monotonic() + DRAIN_GRACE_S
        while time.monotonic() < deadline and descendants(me):
            reap(statuses)
            _check_count(me, max_processes, report)
            time.sleep(0.02)
    except _Stop:
        report["stopped_early"] = 1
    except OSError as exc:
        report["error"] = f"could not start {command[0]}: {exc.strerror or exc}"
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)  # a second request must not interrupt the cleanup
    if report.get("too_many") and shell > 0:
        _freeze_group(shell)
    reap(statuses)
    live = descendants(me)
    leftovers = [f"{name} (pid {pid})" for pid, name in sorted(live.items()) if pid != shell]
    survivors = list(stop_all(me, statuses).values()) if live else []
    # Bounded, so the report always fits the pipe (the caller reads it only after we exit).
    lines = [f"{key}\t{value}" for key, value in report.items() if not isinstance(value, list)]
    lines += [f"leftover\t{item}" for item in leftovers[:MAX_LISTED]]
    lines += [f"survivor\t{item}" for item in survivors[:MAX_LISTED]]
    lines += [f"leftover_count\t{len(leftovers)}", f"survivor_count\t{len(survivors)}"]
    os.write(report_fd, "\n".join(line.replace("\n", " ") for line in lines).encode()[:60000])
    os.close(report_fd)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
