"""run_shell: cwd, exit codes, output cap, and timeouts that kill the whole process group."""
import time

import pytest

from localspec.tools import Limits, Policy, Toolbox


def alive(pid: int) -> bool:
    """True while pid runs; zombies (exited, not yet reaped by an init that never reaps) count as gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def wait_gone(pid: int, within: float = 3.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def tb(tmp_path):
    return Toolbox(workspace=tmp_path, policy=Policy(mode="auto"))


def test_runs_in_workspace_with_exit_code(tb, tmp_path):
    res = tb.call("run_shell", {"command": "pwd; echo oops >&2; exit 3"})
    assert res.ok
    assert res.content == f"{tmp_path.resolve()}\noops\n[exit code: 3]"
    assert res.data["exit_code"] == 3


def test_no_output_and_no_stdin(tb):
    res = tb.call("run_shell", {"command": "cat"})  # would hang if stdin were inherited
    assert res.ok and res.content == "(no output)\n[exit code: 0]"


def test_timeout_kills_background_children(tb):
    start = time.monotonic()
    res = tb.call("run_shell", {"command": "sleep 100 & echo $!; sleep 100", "timeout_s": 1})
    assert time.monotonic() - start < 5
    assert not res.ok and "timed out after 1s" in res.error and "killed" in res.error
    child = int(res.content.splitlines()[0])
    assert wait_gone(child), f"background child {child} survived the timeout"
    assert res.data["timed_out"] is True


def test_timeout_kills_children_that_ignore_sigterm(tb):
    res = tb.call("run_shell", {"command": "sh -c 'trap \"\" TERM; sleep 100' & echo $!; wait", "timeout_s": 0.5})
    assert not res.ok and "timed out" in res.error
    assert wait_gone(int(res.content.splitlines()[0]))


def test_background_leftovers_stopped_after_exit(tb):
    start = time.monotonic()
    res = tb.call("run_shell", {"command": "sleep 100 >/dev/null 2>&1 & echo $!"})
    assert time.monotonic() - start < 5
    assert res.ok and "background processes" in res.content
    assert wait_gone(int(res.content.splitlines()[0]))


def test_output_capped_with_note(tmp_path):
    tb = Toolbox(workspace=tmp_path, policy=Policy(mode="auto"), limits=Limits(shell_output_bytes=1000))
    res = tb.call("run_shell", {"command": "i=0; while [ $i -lt 500 ]; do echo line$i; i=$((i+1)); done; echo END"})
    assert res.ok
    assert res.content.startswith("line0\n")
    assert "END\n[output truncated:" in res.content and "[exit code: 0]" in res.content
    assert len(res.content) < 1300
    assert res.data["truncated_bytes"] > 0


def test_default_timeout_from_limits(tmp_path):
    tb = Toolbox(workspace=tmp_path, policy=Policy(mode="auto"), limits=Limits(shell_timeout_s=0.5))
    res = tb.call("run_shell", {"command": "sleep 10"})
    assert not res.ok and "timed out after 0.5s" in res.error


def test_bad_timeout_names_field(tb):
    for bad in (0, -1, 601, "soon", True):
        res = tb.call("run_shell", {"command": "true", "timeout_s": bad})
        assert not res.ok and "timeout_s" in res.error, bad


def test_empty_command_refused(tb):
    res = tb.call("run_shell", {"command": ""})
    assert not res.ok and "'command'" in res.error


def test_non_utf8_output_is_replaced(tb):
    res = tb.call("run_shell", {"command": r"printf 'a\377b\n'"})
    assert res.ok and res.content.startswith("a\ufffdb")
