"""Policy modes, approval requests, and remembered allow/deny-always decisions."""
import pytest

from localspec.tools import ApprovalRequest, Decision, Policy, Toolbox


class Recorder:
    """An approver that returns scripted decisions and records each request."""

    def __init__(self, *decisions):
        self.decisions = list(decisions)
        self.requests: list[ApprovalRequest] = []

    def __call__(self, request):
        self.requests.append(request)
        return self.decisions.pop(0) if self.decisions else False


@pytest.fixture
def ws(tmp_path):
    (tmp_path / "f.txt").write_text("hello\n")
    return tmp_path


def test_invalid_mode_raises_value_error():
    with pytest.raises(ValueError, match="invalid policy mode"):
        Policy(mode="yolo")
    p = Policy()
    with pytest.raises(ValueError):
        p.mode = "everything"
    assert p.mode == "ask" and Policy("read_only").mode == "read-only"


def test_ask_mode_reads_run_without_approver(ws):
    tb = Toolbox(workspace=ws, policy=Policy(mode="ask"))
    assert tb.call("read_file", {"path": "f.txt"}).ok
    assert tb.call("list_dir", {}).ok
    assert tb.call("search_text", {"pattern": "hello"}).ok


def test_ask_mode_without_approver_denies_writes_and_shell(ws):
    tb = Toolbox(workspace=ws, policy=Policy(mode="ask"), approver=None)
    for name, args in [("write_file", {"path": "g.txt", "content": "x"}),
                       ("edit_file", {"path": "f.txt", "old": "hello", "new": "bye"}),
                       ("run_shell", {"command": "touch made_by_shell"})]:
        res = tb.call(name, args)
        assert not res.ok and "approval" in res.error and "no approver" in res.error, name
    assert sorted(p.name for p in ws.iterdir()) == ["f.txt"]
    assert (ws / "f.txt").read_text() == "hello\n"


def test_read_only_mode_refuses_writes_and_shell(ws):
    rec = Recorder(True, True, True)
    tb = Toolbox(workspace=ws, policy=Policy(mode="read-only"), approver=rec)
    for name, args in [("write_file", {"path": "g.txt", "content": "x"}),
                       ("edit_file", {"path": "f.txt", "old": "hello", "new": "bye"}),
                       ("run_shell", {"command": "touch made_by_shell"})]:
        res = tb.call(name, args)
        assert not res.ok and "read-only" in res.error, name
    assert rec.requests == []  # never even asked
    assert sorted(p.name for p in ws.iterdir()) == ["f.txt"]
    assert tb.call("read_file", {"path": "f.txt"}).ok
    assert [s["function"]["name"] for s in tb.specs(available_only=True)] == ["read_file", "list_dir", "search_text"]
    assert len(tb.specs()) == 6


def test_auto_mode_runs_without_asking(ws):
    tb = Toolbox(workspace=ws, policy=Policy(mode="auto"), approver=lambda r: pytest.fail("asked in auto mode"))
    assert tb.call("run_shell", {"command": "echo hi > out.txt"}).ok
    assert (ws / "out.txt").read_text() == "hi\n"


def test_request_fields_for_shell(ws):
    rec = Recorder(True)
    tb = Toolbox(workspace=ws, approver=rec)
    res = tb.call("run_shell", {"command": "rm -rf build"})
    assert res.ok
    req = rec.requests[0]
    assert req.tool == "run_shell" and req.arguments["command"] == "rm -rf build"
    assert req.cwd == ws.resolve() and req.diff is None
    assert req.danger.level == "high" and any("rm -r" in r for r in req.danger.reasons)
    assert req.summary == "run: rm -rf build" and req.patterns == ("rm",)


def test_deny_once_then_asked_again(ws):
    rec = Recorder(False, Decision.DENY_ONCE, "allow once")
    tb = Toolbox(workspace=ws, approver=rec)
    assert "denied by the user" in tb.call("run_shell", {"command": "echo a"}).error
    assert not tb.call("run_shell", {"command": "echo a"}).ok
    assert tb.call("run_shell", {"command": "echo a"}).ok
    assert len(rec.requests) == 3


def test_allow_always_remembered_per_program(ws):
    rec = Recorder(Decision.ALLOW_ALWAYS)
    tb = Toolbox(workspace=ws, approver=rec)
    assert tb.call("run_shell", {"command": "echo one"}).ok
    assert tb.call("run_shell", {"command": "echo two"}).ok  # same program: not asked
    assert len(rec.requests) == 1
    assert not tb.call("run_shell", {"command": "ls"}).ok  # other program: asked (Recorder then denies)
    assert len(rec.requests) == 2
    assert tb.policy.remembered()["allow"] == {"run_shell": ["echo"]}


def test_allow_always_uses_subcommand_pattern(ws):
    rec = Recorder("allow_always")
    tb = Toolbox(workspace=ws, approver=rec)
    tb.call("run_shell", {"command": "git status"})
    tb.call("run_shell", {"command": "git status --short"})
    tb.call("run_shell", {"command": "git log"})
    assert [r.patterns for r in rec.requests] == [("git status",), ("git log",)]


def test_allow_always_does_not_cover_chained_commands(ws):
    rec = Recorder(Decision.ALLOW_ALWAYS)
    tb = Toolbox(workspace=ws, approver=rec)
    tb.call("run_shell", {"command": "echo ok"})
    res = tb.call("run_shell", {"command": "echo ok && touch sneaky"})
    assert not res.ok and len(rec.requests) == 2 and rec.requests[1].patterns == ("echo", "touch")
    assert not (ws / "sneaky").exists()
    res = tb.call("run_shell", {"command": "echo $(touch sneaky)"})  # substitution: exact text only
    assert not res.ok and not (ws / "sneaky").exists()


def test_allow_always_still_asks_for_high_danger(ws):
    rec = Recorder(Decision.ALLOW_ALWAYS, False)
    tb = Toolbox(workspace=ws, approver=rec)
    (ws / "d").mkdir()
    assert tb.call("run_shell", {"command": "rm f.txt"}).ok
    res = tb.call("run_shell", {"command": "rm -r d"})
    assert not res.ok and len(rec.requests) == 2 and (ws / "d").is_dir()


def test_deny_always_remembered(ws):
    rec = Recorder(Decision.DENY_ALWAYS)
    tb = Toolbox(workspace=ws, approver=rec)
    assert not tb.call("run_shell", {"command": "touch a"}).ok
    res = tb.call("run_shell", {"command": "touch b"})
    assert not res.ok and "deny always" in res.error
    res = tb.call("run_shell", {"command": "ls && touch c"})  # any denied part denies the whole
    assert not res.ok and len(rec.requests) == 1
    assert not any((ws / n).exists() for n in "abc")
    assert tb.policy.remembered()["deny"] == {"run_shell": ["touch"]}


def test_deny_always_applies_even_in_auto_mode(ws):
    policy = Policy(mode="ask")
    tb = Toolbox(workspace=ws, policy=policy, approver=Recorder(Decision.DENY_ALWAYS))
    tb.call("run_shell", {"command": "touch x"})
    policy.mode = "auto"
    assert not tb.call("run_shell", {"command": "touch y"}).ok
    assert tb.call("run_shell", {"command": "echo fine"}).ok


def test_write_allow_always_is_per_tool_and_path(ws):
    rec = Recorder(Decision.ALLOW_ALWAYS, Decision.ALLOW_ONCE)
    tb = Toolbox(workspace=ws, approver=rec)
    assert tb.call("write_file", {"path": "f.txt", "content": "v1\n"}).ok
    assert tb.call("write_file", {"path": "./f.txt", "content": "v2\n"}).ok  # same file: not asked
    assert tb.call("write_file", {"path": "other.txt", "content": "v\n"}).ok  # other file: asked
    assert [r.patterns for r in rec.requests] == [("f.txt",), ("other.txt",)]
    assert (ws / "f.txt").read_text() == "v2\n"


def test_approver_errors_and_odd_answers_deny(ws):
    def broken(req):
        raise RuntimeError("ui went away")

    res = Toolbox(workspace=ws, approver=broken).call("run_shell", {"command": "touch x"})
    assert not res.ok and "ui went away" in res.error
    res = Toolbox(workspace=ws, approver=lambda r: "perhaps").call("run_shell", {"command": "touch x"})
    assert not res.ok and "unrecognised decision" in res.error
    assert not (ws / "x").exists()


def test_decision_coercion():
    assert Decision.coerce(True) is Decision.ALLOW_ONCE
    assert Decision.coerce(False) is Decision.DENY_ONCE
    assert Decision.coerce(None) is Decision.DENY_ONCE
    assert Decision.coerce("Allow Always") is Decision.ALLOW_ALWAYS
    assert Decision.coerce("DENY_ALWAYS") is Decision.DENY_ALWAYS
    assert Decision.ALLOW_ONCE == "allow_once"
    with pytest.raises(ValueError):
        Decision.coerce(3)
