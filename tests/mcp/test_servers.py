"""MCP servers as real processes (the test server over stdio and streamable HTTP): listing, calling, approvals in
each mode, a server that fails to start, one that crashes mid-call, a slow one, and no processes left behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from localspec.mcp import attach_servers
from localspec.tools import Decision, Policy, Toolbox
from tests.mcp.conftest import SERVER, Recorder, stdio_server, write_mcp_config

ROOT = Path(__file__).resolve().parents[2]



def open_tools(tmp_path, servers: dict, policy="auto", approver=None):
    notices: list[str] = []
    toolbox = Toolbox(tmp_path, Policy(policy), approver)
    mcp = attach_servers(toolbox, write_mcp_config(tmp_path / "mcp.json", servers), on_notice=notices.append)
    mcp.wait()
    return toolbox, mcp, notices


def proc_cmdlines_with(tag: str) -> list[str]:
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


def test_lists_and_calls_tools_over_stdio_and_http(tmp_path, home, notes, http_server):
    servers = {"notes": stdio_server(notes, "--extra"),
               "web": {"url": http_server, "headers": {"Authorization": "Bearer s3cret"}, "trusted": True}}
    toolbox, mcp, notices = open_tools(tmp_path, servers)
    try:
        assert notices == []
        names = toolbox.names()
        # built-ins first and unchanged; a clash with a built-in or between servers gets server__tool
        assert names[:6] == ["read_file", "list_dir", "search_text", "write_file", "edit_file", "run_shell"]
        assert set(names[6:]) == {"notes__read_note", "notes__write_note", "notes__read_file", "snapshot", "dump",
                                  "web__read_note", "web__write_note"}
        spec = next(s["function"] for s in toolbox.specs() if s["function"]["name"] == "notes__write_note")
        assert spec["parameters"] == {"type": "object", "properties": {"name": {"type": "string"},
                                                                       "text": {"type": "string"}},
                                      "required": ["name", "text"]}  # the server's schema, titles dropped
        assert spec["description"] == "Write TEXT into the note called NAME (replacing it)."
        kinds = {d.name: (d.kind, d.source) for d in toolbox.tool_defs()}
        assert kinds["web__read_note"] == ("read", "mcp:web") and kinds["notes__write_note"] == ("write", "mcp:notes")

        r = toolbox.call("web__read_note", {"name": "todo"})
        assert r.ok and r.content == "buy milk\n" and r.tool == "web__read_note"
        r = toolbox.call("notes__write_note", json.dumps({"name": "new", "text": "hi"}))
        assert r.ok and (notes / "new.txt").read_text() == "hi"
        r = toolbox.call("snapshot", {})
        assert r.ok and "[image: image/png" in r.content and "[resource notes://raw" in r.content
        r = toolbox.call("notes__read_note", {"name": "missing"})  # the tool's own error, as an error result
        assert not r.ok and "no note called 'missing'" in r.error
        r = toolbox.call("dump", {"size": 200_000})
        assert r.ok and len(r.content) < 70_000 and "characters omitted" in r.content
        assert toolbox.call("list_dir", {"path": "."}).ok  # built-ins keep working
        status = {s.name: s for s in mcp.servers()}
        assert status["web"].state == "running" and status["web"].transport == "http"
        assert status["notes"].log and Path(status["notes"].log).parent == home / "logs" / "mcp"
    finally:
        mcp.close()


@pytest.mark.slow  # real MCP server processes
def test_wrong_http_token_is_one_clear_line(tmp_path, home, http_server):
    toolbox, mcp, notices = open_tools(tmp_path, {"web": {"url": http_server,
                                                          "headers": {"Authorization": "Bearer wrong"}}})
    mcp.close()
    assert len(notices) == 1 and "HTTP 401" in notices[0] and "'web'" in notices[0]
    assert toolbox.names() == ["read_file", "list_dir", "search_text", "write_file", "edit_file", "run_shell"]


@pytest.mark.slow  # real MCP server processes
@pytest.mark.parametrize("mode", ["ask", "read-only", "never", "auto"])
def test_approvals_in_each_mode(tmp_path, home, notes, mode):
    """A trusted server's readOnlyHint tools run like read_file in every mode; the others are treated like a write
    (an untrusted server's are all writes: tests/mcp/test_security.py)."""
    answer = {"ask": Decision.DENY_ONCE, "never": False}.get(mode)
    approver = Recorder(answer) if mode in ("ask", "never") else None
    policy = "ask" if mode in ("ask", "never") else mode
    toolbox, mcp, _ = open_tools(tmp_path, {"notes": stdio_server(notes, trusted=True)}, policy, approver)
    try:
        read = toolbox.call("read_note", {"name": "todo"})
        assert read.ok and read.content == "buy milk\n"
        write = toolbox.call("write_note", {"name": "w", "text": "x"})
        offered = {s["function"]["name"] for s in toolbox.specs(available_only=True)}
        if mode == "auto":
            assert write.ok and (notes / "w.txt").exists()
        else:
            assert not write.ok and not (notes / "w.txt").exists()
        if mode == "read-only":
            assert "refused" in write.error and "read-only" in write.error
            assert "read_note" in offered and "write_note" not in offered  # the model is not offered it
        if mode in ("ask", "never"):
            assert "denied by the user" in write.error
            (request,) = approver.requests  # asked once: for the write, never for the read
            assert request.tool == "write_note" and request.arguments == {"name": "w", "text": "x"}
            assert "notes" in request.summary and "write_note" in request.summary  # server and tool shown
            assert request.patterns == ("notes:write_note",)
    finally:
        mcp.close()


@pytest.mark.slow  # real MCP server processes
def test_always_is_remembered_for_that_server_tool(tmp_path, home, notes):
    approver = Recorder(Decision.ALLOW_ALWAYS)
    toolbox, mcp, _ = open_tools(tmp_path, {"notes": stdio_server(notes)}, "ask", approver)
    try:
        assert toolbox.call("write_note", {"name": "a", "text": "1"}).ok
        assert toolbox.call("write_note", {"name": "b", "text": "2"}).ok  # other arguments: not asked again
        assert len(approver.requests) == 1
        assert toolbox.policy.remembered()["allow"] == {"write_note": ["notes:write_note"]}
        approver.answer = Decision.DENY_ALWAYS
        toolbox.policy.forget()
        assert not toolbox.call("write_note", {"name": "c", "text": "3"}).ok
        r = toolbox.call("write_note", {"name": "d", "text": "4"})
        assert not r.ok and "deny always" in r.error and len(approver.requests) == 2
    finally:
        mcp.close()


@pytest.mark.slow  # 1-4 s each (the fast tier's budget: under a minute)
def test_servers_that_fail_to_start_are_one_line_each(tmp_path, home, notes):
    servers = {"good": stdio_server(notes),
               "broken": stdio_server(notes, "--mode", "fail-start"),
               "missing": {"command": str(tmp_path / "no-such-server")},
               "late": stdio_server(notes, "--mode", "slow", startupTimeout=0.001)}
    toolbox, mcp, notices = open_tools(tmp_path, servers)
    try:
        by_server = {n.split("'")[1]: n for n in notices}
        assert set(by_server) == {"broken", "missing", "late"}
        assert all("\n" not in n and "Traceback" not in n for n in notices)
        assert "simulated failure" in by_server["broken"]  # the server's own last stderr line
        assert "command not found" in by_server["missing"]
        assert "did not start within" in by_server["late"]
        assert {"read_note", "write_note"} <= set(toolbox.names())  # the good server's tools, own names
        assert toolbox.call("read_note", {"name": "todo"}).ok and toolbox.call("list_dir", {}).ok
        states = {s.name: s.state for s in mcp.servers()}
        assert states == {"good": "running", "broken": "failed", "missing": "failed", "late": "failed"}
    finally:
        mcp.close()


@pytest.mark.slow  # real MCP server processes
def test_a_server_that_crashes_mid_call(tmp_path, home, notes):
    toolbox, mcp, notices = open_tools(tmp_path, {"notes": stdio_server(notes, "--mode", "crash")})
    try:
        r = toolbox.call("write_note", {"name": "x", "text": "y"})
        assert not r.ok and "\n" not in r.error
        assert "MCP server 'notes' stopped while running write_note" in r.error
        assert len(notices) == 1 and "stopped" in notices[0] and "no longer available" in notices[0]
        assert "write_note" not in toolbox.names() and "read_note" not in toolbox.names()
        r = toolbox.call("read_note", {"name": "todo"})
        assert not r.ok and "unknown tool" in r.error
        assert toolbox.call("list_dir", {}).ok  # the built-ins keep working
    finally:
        mcp.close()


@pytest.mark.slow  # real MCP server processes
def test_a_server_that_exits_between_calls_is_noticed(tmp_path, home, notes):
    toolbox, mcp, notices = open_tools(tmp_path, {"notes": stdio_server(notes, "--mode", "exit-soon", "--delay", "1")})
    try:
        deadline = time.monotonic() + 20
        while not notices and time.monotonic() < deadline:
            time.sleep(0.1)
        assert notices == ["MCP server 'notes' stopped: the server process exited; its tools are no longer available"]
        assert "read_note" not in toolbox.names() and mcp.servers()[0].state == "failed"
    finally:
        mcp.close()


@pytest.mark.slow  # real MCP server processes
def test_a_tool_with_an_unusable_schema_is_left_out_with_the_reason(tmp_path, home, notes):
    toolbox, mcp, notices = open_tools(tmp_path, {"notes": stdio_server(notes, "--bad-schema")})
    try:
        assert "broken_schema" not in toolbox.names() and "read_note" in toolbox.names()
        toolbox.names()  # a rebuilt list does not repeat the notice
        assert notices == ["MCP server 'notes': tool 'broken_schema' left out: its input schema cannot be used for "
                           "constrained calls (Invalid type: nonsense)"]
        assert mcp.servers()[0].skipped == ("broken_schema: its input schema cannot be used for constrained calls "
                                            "(Invalid type: nonsense)",)
    finally:
        mcp.close()


@pytest.mark.slow  # real MCP server processes
def test_a_slow_server_times_out_with_a_clear_error(tmp_path, home, notes):
    toolbox, mcp, _ = open_tools(tmp_path, {"notes": stdio_server(notes, "--mode", "slow", "--delay", "30",
                                                                  timeout=1)})
    try:
        start = time.monotonic()
        r = toolbox.call("read_note", {"name": "todo"})
        assert time.monotonic() - start < 10
        assert not r.ok and "MCP server 'notes' did not answer read_note within 1s" in r.error
        assert "abandoned" in r.error and "\n" not in r.error
    finally:
        start = time.monotonic()
        mcp.close()
        assert time.monotonic() - start < 15  # a server stuck in a call is still stopped


@pytest.mark.slow  # real MCP server processes
def test_no_processes_are_left_behind(tmp_path, home, notes):
    """The server and a child it started (which outlives a clean server exit) are both gone after close()."""
    tag = uuid.uuid4().hex
    toolbox, mcp, _ = open_tools(tmp_path, {"a": stdio_server(notes, "--spawn-child", "--tag", tag),
                                            "b": stdio_server(notes, "--tag", tag)})
    assert toolbox.call("a__read_note", {"name": "todo"}).ok
    running = proc_cmdlines_with(tag)
    servers = [c for c in running if str(SERVER) in c and "reaper.py" not in c]  # (each runs under the wrapper)
    assert any("child-of-test-server" in c for c in running) and len(servers) == 2
    mcp.close()
    deadline = time.monotonic() + 5
    while proc_cmdlines_with(tag) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert proc_cmdlines_with(tag) == []
    assert not [t for t in threading.enumerate() if t.name == "localspec-mcp"]  # the event-loop thread too
    mcp.close()  # twice is fine


@pytest.mark.slow  # real MCP server processes
def test_switching_a_server_off_and_on(tmp_path, home, notes):
    toolbox, mcp, _ = open_tools(tmp_path, {"notes": stdio_server(notes), "off": stdio_server(notes, disabled=True)})
    try:
        assert {s.name: s.state for s in mcp.servers()} == {"notes": "running", "off": "off"}
        mcp.set_enabled("notes", False)
        assert "read_note" not in toolbox.names() and mcp.servers()[0].state == "off"
        mcp.set_enabled("off", True)  # a server disabled in mcp.json can be switched on for the session
        assert "read_note" in toolbox.names() and toolbox.call("read_note", {"name": "todo"}).ok
        mcp.set_enabled("notes", True)
        assert "notes__read_note" in toolbox.names() and "off__read_note" in toolbox.names()
    finally:
        mcp.close()


def localspec(*args, home: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, LOCALSPEC_HOME=str(home),
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "localspec", *map(str, args)], cwd=ROOT, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)


@pytest.mark.slow  # real MCP server processes
def test_tools_command(tmp_path, notes):
    home = tmp_path / "home"
    cfg = write_mcp_config(tmp_path / "mcp.json", {
        "notes": stdio_server(notes, trusted=True), "broken": stdio_server(notes, "--mode", "fail-start"),
        "junk": {"command": sys.executable, "args": ["-c", "print('{}')"]}})  # not JSON-RPC, then exits
    proc = localspec("tools", "--mcp-config", cfg, "--json", home=home)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert all(set(r) == {"name", "source", "read_only", "description"} for r in rows)
    by_name = {r["name"]: r for r in rows}
    assert by_name["read_file"]["source"] == "builtin" and by_name["read_file"]["read_only"] is True
    assert by_name["run_shell"]["read_only"] is False
    assert by_name["read_note"] == {"name": "read_note", "source": "mcp:notes", "read_only": True,
                                    "description": "Read the note called NAME from the notebook."}
    assert by_name["write_note"]["read_only"] is False
    errors = sorted(ln for ln in proc.stderr.splitlines() if ln.strip())
    assert len(errors) == 2, proc.stderr  # one line per failed server, no traceback from the SDK's logging
    assert "'broken' failed to start" in errors[0] and "'junk' failed to start" in errors[1]
    # The default file in the config folder, shown by `localspec config show`.
    (home / "config").mkdir(parents=True)
    (home / "config" / "mcp.json").write_text(cfg.read_text())
    text = localspec("tools", home=home)
    assert text.returncode == 0 and "read_note" in text.stdout and "mcp:notes" in text.stdout
    shown = localspec("config", "show", home=home)
    assert f"# MCP servers: {home / 'config' / 'mcp.json'}" in shown.stdout
    bad = localspec("tools", "--mcp-config", tmp_path / "missing.json", home=home)
    assert bad.returncode == 1 and bad.stderr.strip().count("\n") == 0 and "file not found" in bad.stderr
