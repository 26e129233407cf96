"""Starting a stdio server so that everything it starts can be stopped, and stopping it: the way run_shell does.

Why: the SDK closes the server's stdin and kills its process group only if the server itself does not exit in
time; a server that exits cleanly can still leave children running (a launcher's worker, a watcher it started),
and one that forks, calls setsid and execs with an empty environment leaves both the group and any marker. So on
Linux a server runs under run_shell's wrapper (tools/shell/reaper.py), a child subreaper: whatever the server starts
stays its descendant, and is stopped (SIGTERM, then SIGSTOP/SIGKILL sweeps) when the server exits or is told to;
the wrapper reports what it could not stop. Every server also carries a marker in its environment: if the
wrapper itself is gone, processes carrying the marker are found (/proc, tools/shell/procfs.py) and stopped.

The program is looked up the way run_shell's commands are: in PATH without empty or relative entries (a `.` in
PATH would run a `helper` from whatever folder the user is in).
"""

from __future__ import annotations

import errno
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from localspec.constants import ENV_MCP_SERVER_MARK
from localspec.tools.shell import procfs
from localspec.tools.shell.environ import safe_path
from localspec.tools.shell.reaper import parse_report

MARKER = ENV_MCP_SERVER_MARK
REAPER = Path(procfs.__file__).with_name("reaper.py")
_LISTED = 5


def marked(token: str) -> list[int]:
    """Pids of live processes whose environment holds MARKER=token."""
    return procfs.marked(MARKER, token)


def stop_marked(token: str, grace_s: float = 2.0) -> tuple[int, list[int]]:
    """Stop every process carrying the marker (SIGTERM, `grace_s`, then SIGSTOP/SIGKILL sweeps); (how many were
    found, the pids still there)."""
    return procfs.stop_marked(MARKER, token, grace_s=grace_s)


def use_reaper() -> bool:
    return sys.platform.startswith("linux") and bool(sys.executable) and os.path.isdir("/proc/self") \
        and REAPER.is_file()


def program_path(command: str, env: Mapping[str, str]) -> str:
    """The program to run: a path as given (mcp.json's relative ones were resolved against its folder), or a bare
    name looked up in PATH without empty or relative entries. FileNotFoundError when there is none."""
    if os.sep in command or (os.altsep and os.altsep in command):
        if not os.path.isfile(command):  # said here: the wrapper could only report "the connection closed"
            raise FileNotFoundError(errno.ENOENT, "not found", command)
        return command
    path = safe_path(env.get("PATH") or os.environ.get("PATH") or os.defpath)
    found = shutil.which(command, path=path)
    if found is None:
        raise FileNotFoundError(errno.ENOENT, "not found",
                                f"{command} (looked up in PATH without its empty or relative entries)")
    return os.path.abspath(found)


@dataclass(frozen=True)
class Launch:
    """How the SDK is asked to start a server: the command line, and where the wrapper reports (None: no wrapper)."""
    command: str
    args: tuple[str, ...]
    report: Path | None


def launch(program: str, args: tuple[str, ...]) -> Launch:
    """The command line that runs `program` under the wrapper (Linux), or as it is (elsewhere)."""
    if not use_reaper():
        return Launch(program, tuple(args), None)
    fd, name = tempfile.mkstemp(prefix="localspec-mcp-", suffix=".report")  # 0600, O_EXCL
    os.close(fd)
    return Launch(sys.executable, ("-I", "-S", str(REAPER), name, "0", program, *args), Path(name))


def finish(token: str, report_path: Path | None) -> list[str]:
    """After the server has exited: stop whatever still carries its marker, and say what could not be stopped.
    Returns the lines to tell the user (none when everything stopped)."""
    report = _read(report_path) if report_path is not None else None
    notes: list[str] = []
    if report is not None:
        survivors = list(report.get("survivors", []))
        count = int(report.get("survivor_count") or len(survivors))
        if count:
            shown = "; ".join(survivors[:_LISTED]) + (" ..." if count > _LISTED else "")
            notes.append(f"could not stop {count} process(es) it started; they may still be running: {shown}")
    found, left = stop_marked(token, grace_s=0.5 if report is None or "exit" not in report else 0.0)
    if report_path is not None and (report is None or "exit" not in report) and found:
        notes.append(f"its process tracker was stopped before it finished; {found} process(es) found by their "
                     "environment were stopped, but any that cleared their environment may still run")
    if left:
        notes.append(f"could not stop {len(left)} process(es) it started (pids {', '.join(map(str, left[:10]))})")
    return notes


def _read(path: Path) -> dict | None:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    finally:
        try:
            path.unlink()
        except OSError:
            pass
    return parse_report(text)
