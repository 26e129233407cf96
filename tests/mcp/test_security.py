"""MCP servers under the same rules as everything else (issue 27): paths in mcp.json mean what they meant where the
file is, not wherever localspec runs; a bare command name is looked up without `.` or empty PATH entries; a
server's annotations are believed only when the user marked it trusted; and whatever a server starts is stopped
with it (the run_shell wrapper), with a notice for anything that could not be."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from localspec.errors import ConfigError
from localspec.mcp import attach_servers, procs
from localspec.mcp.servers_file import load_mcp_config, parse_servers
from localspec.tools import Decision, Policy, Toolbox
from tests.mcp.conftest import Recorder, stdio_server, write_mcp_config


def proc_cmdlines_with(tag: str) -> list[str]:
    """Command lines of live processes that mention `tag`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes().replace(b"\x00", b" ").decode(errors="replace")
                state = (entry / "stat").read_text().rpartition(")")[2].split()[0]
            except OSError:
                continue
            if tag in cmd and state != "Z":
                found.append(cmd)
    return found


def executable(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def hostile_repo(tmp_path, monkeypatch):
    """The folder the user runs localspec in: a cloned repository that supplies `bin/helper`, `mcp-helper` and
    `run/here`, each of which would leave PWNED behind."""
    repo = tmp_path / "repo"
    for rel in ("bin/helper", "mcp-helper", "run/here"):
        executable(repo / rel, f"touch {repo}/PWNED")
    monkeypatch.chdir(repo)
    return repo


def start(tmp_path, servers: dict, cfg_dir: Path, policy="auto", approver=None):
    notices: list[str] = []
    toolbox = Toolbox(tmp_path, Policy(policy), approver)
    mcp = attach_servers(toolbox, write_mcp_config(cfg_dir / "mcp.json", servers), on_notice=notices.append)
    mcp.wait()
    return toolbox, mcp, notices


# ---- paths ---------------------------------------------------------------------------------------------------------

def test_relative_command_and_cwd_are_the_config_folders(tmp_path, hostile_repo):
    cfg_dir = tmp_path / "config"
    cfg_dir.mkdir()
    write_mcp_config(cfg_dir / "mcp.json", {"s": {"command": "bin/helper", "cwd": "data"},
                                            "t": {"command": "./run/here"}, "u": {"command": "~/x/y"},
                                            "v": {"command": "npx", "cwd": "/abs"}})
    servers = {s.name: s for s in load_mcp_config(cfg_dir / "mcp.json").servers}
    assert servers["s"].command == str(cfg_dir / "bin" / "helper") and servers["s"].cwd == str(cfg_dir / "data")
    assert servers["t"].command == str(cfg_dir / "run" / "here")
    assert servers["u"].command == os.path.expanduser("~/x/y")
    assert servers["v"].command == "npx" and servers["v"].cwd == "/abs"  # bare names: looked up at start
    with pytest.raises(ConfigError, match="relative"):
        parse_servers({"mcpServers": {"s": {"command": "bin/helper"}}}, "x", {})  # no folder to resolve against


@pytest.mark.parametrize("server", [{"command": "bin/helper"}, {"command": "./run/here"}, {"command": "mcp-helper"},
                                    {"command": "helper", "cwd": "bin"}])
@pytest.mark.parametrize("path", [".:{PATH}", ":{PATH}", "{PATH}:", "bin:{PATH}", "{PATH}::"])
def test_nothing_runs_from_the_working_folder(tmp_path, home, hostile_repo, monkeypatch, server, path):
    monkeypatch.setenv("PATH", path.format(PATH=os.environ["PATH"]))
    cfg_dir = tmp_path / "config"
    cfg_dir.mkdir()
    _, mcp, notices = start(tmp_path, {"s": server}, cfg_dir)
    try:
        assert mcp.servers()[0].state == "failed" and "not found" in notices[0], notices
    finally:
        mcp.close()
    assert not (hostile_repo / "PWNED").exists()


@pytest.mark.slow  # real MCP server processes
def test_a_bare_name_is_found_on_an_absolute_path_entry(tmp_path, home, notes, monkeypatch):
    bindir = tmp_path / "tools-bin"
    executable(bindir / "notes-server", f'exec "{sys.executable}" {" ".join(stdio_server(notes)["args"])}')
    monkeypatch.setenv("PATH", f".:{bindir}:{os.environ['PATH']}")
    toolbox, mcp, notices = start(tmp_path, {"notes": {"command": "notes-server"}}, tmp_path)
    try:
        assert notices == [] and toolbox.call("read_note", {"name": "todo"}).ok
    finally:
        mcp.close()


# ---- trust ---------------------------------------------------------------------------------------------------------

@pytest.mark.slow  # real MCP server processes
def test_an_untrusted_servers_read_only_claim_is_not_believed(tmp_path, home, notes):
    approver = Recorder(Decision.DENY_ONCE)
    toolbox, mcp, _ = start(tmp_path, {"liar": stdio_server(notes, "--lying")}, tmp_path, "ask", approver)
    try:
        kinds = {d.name: d.kind for d in toolbox.tool_defs() if d.source == "mcp:liar"}
        assert set(kinds.values()) == {"write"}  # read_note, peek and escape all claim readOnlyHint
        r = toolbox.call("peek", {"name": "x"})
        assert not r.ok and "denied by the user" in r.error and not (notes / "PWNED.txt").exists()
        (request,) = approver.requests
        assert request.danger.level == "medium" and "not marked trusted" in str(request.danger)
        toolbox.policy.mode = "read-only"  # --read-only refuses every tool of an untrusted server
        for name in kinds:
            r = toolbox.call(name, {"name": "todo"} if name != "escape" else {})
            assert not r.ok and "read-only" in r.error, (name, r)
        assert not (notes / "PWNED.txt").exists() and len(approver.requests) == 1
        offered = {s["function"]["name"] for s in toolbox.specs(available_only=True)}
        assert not offered & set(kinds)
    finally:
        mcp.close()


@pytest.mark.slow  # real MCP server processes
def test_a_trusted_servers_hints_are_believed(tmp_path, home, notes):
    toolbox, mcp, _ = start(tmp_path, {"liar": stdio_server(notes, "--lying", trusted=True)}, tmp_path,
                            "read-only")
    try:
        assert toolbox.call("read_note", {"name": "todo"}).ok  # the user vouched for it: read-only runs
        assert toolbox.call("peek", {"name": "x"}).ok and (notes / "PWNED.txt").exists()  # (so a liar can lie)
        assert not toolbox.call("write_note", {"name": "w", "text": "x"}).ok
    finally:
        mcp.close()


def test_trusted_must_be_a_boolean(tmp_path):
    with pytest.raises(ConfigError, match="trusted"):
        parse_servers({"mcpServers": {"s": {"command": "/bin/true", "trusted": "yes"}}}, "x", {})


@pytest.mark.slow  # real MCP server processes
def test_the_tools_command_shows_untrusted_tools_as_writes(tmp_path, notes):
    cfg = write_mcp_config(tmp_path / "mcp.json", {"notes": stdio_server(notes)})
    env = {**os.environ, "LOCALSPEC_HOME": str(tmp_path / "home"), "PYTHONPATH": str(Path(__file__).parents[2])}
    proc = subprocess.run([sys.executable, "-m", "localspec", "tools", "--mcp-config", str(cfg), "--json"],
                          capture_output=True, text=True, env=env, timeout=120)
    rows = {r["name"]: r for r in json.loads(proc.stdout)}
    assert rows["read_note"]["read_only"] is False and rows["read_file"]["read_only"] is True


# ---- processes -------------------------------------------------------------------------------------------------------

@pytest.mark.skipif(not procs.use_reaper(), reason="the process wrapper needs Linux /proc")
@pytest.mark.slow  # real MCP server processes
def test_a_process_that_left_the_group_and_cleared_its_environment_is_stopped(tmp_path, home, notes):
    tag = uuid.uuid4().hex
    toolbox, mcp, notices = start(tmp_path, {"s": stdio_server(notes, "--lying", "--tag", tag)}, tmp_path)
    try:
        assert toolbox.call("escape", {}).ok
        deadline = time.monotonic() + 5
        while not [c for c in proc_cmdlines_with(tag) if "escaped-" in c] and time.monotonic() < deadline:
            time.sleep(0.05)
        escaped = [c for c in proc_cmdlines_with(tag) if "escaped-" in c]
        assert escaped, "the escaping process did not start"
    finally:
        mcp.close()
    deadline = time.monotonic() + 10
    while proc_cmdlines_with(tag) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert proc_cmdlines_with(tag) == []
    assert not [n for n in notices if "could not stop" in n], notices  # all of it stopped: nothing to report


def test_what_could_not_be_stopped_is_a_notice(tmp_path):
    report = tmp_path / "report"
    report.write_text("shell\t123\nexit\t0\nleftover\tsleep (pid 9)\nsurvivor\tsleep (pid 9): permission denied\n"
                      "leftover_count\t1\nsurvivor_count\t1")
    (note,) = procs.finish(uuid.uuid4().hex, report)
    assert "could not stop 1 process" in note and "permission denied" in note and not report.exists()


@pytest.mark.skipif(not procs.use_reaper(), reason="needs Linux /proc")
def test_a_killed_tracker_falls_back_to_the_marker_and_says_so(tmp_path):
    token = uuid.uuid4().hex
    child = subprocess.Popen(["sleep", "600"], env={**os.environ, procs.MARKER: token}, start_new_session=True)
    report = tmp_path / "report"
    report.write_text("shell\t1\n")  # the wrapper died before its final report
    try:
        # Seen in /proc first: on a loaded machine (the fast tier on both cores) finish once swept before it was.
        deadline = time.monotonic() + 5
        while child.pid not in procs.marked(token) and time.monotonic() < deadline:
            time.sleep(0.01)
        (note,) = procs.finish(token, report)
        assert "process tracker was stopped" in note and "cleared their environment" in note
        assert child.wait(5) == -signal.SIGKILL or child.returncode < 0
    finally:
        if child.poll() is None:
            child.kill()


@pytest.mark.skipif(not procs.use_reaper(), reason="needs Linux /proc")
def test_one_proc_helper_for_shell_and_mcp():
    """Issue 29: run_shell and MCP servers find their processes with the same /proc helper."""
    import localspec.tools.shell.execute as shell
    import localspec.tools.shell.reaper as reaper
    from localspec.tools.shell import procfs

    assert procs.marked.__module__ == "localspec.mcp.procs" and reaper.descendants is procfs.descendants
    assert "procfs.stop_marked" in open(shell.__file__).read() and "def _marked" not in open(shell.__file__).read()
    token = uuid.uuid4().hex
    child = subprocess.Popen(["sleep", "600"], env={**os.environ, shell.RUN_MARK: token})
    try:
        assert procfs.marked(shell.RUN_MARK, token) == [child.pid]
        assert shell._kill_marked(token) == 1 and child.wait(5) < 0
    finally:
        if child.poll() is None:
            child.kill()
