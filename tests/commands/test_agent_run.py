"""`localspec run PROMPT --tools` as a user runs it (subprocess, real llama.cpp, the tiny GGUF), plus the
--approve modes and the terminal approver."""

from __future__ import annotations

import io
import json
from argparse import Namespace

import pytest

from localspec.agent import AgentResult, ToolCallRecord
from localspec.commands.agent_run import _policy_and_approver, terminal_approver
from localspec.speculative.stats import Stats
from localspec.tools import Decision, NotAsked, Toolbox, ToolResult
from tests.cli_helpers import AGENT_ARGS, localspec


def test_run_tools_json(tiny_target, workspace, tmp_path):
    home = tmp_path / "home"
    proc = localspec("run", "list the files", "--target", tiny_target, *AGENT_ARGS, "--approve", "auto",
                     "--workspace", workspace, "--json", home=home)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["steps"] == 2
    assert {"text", "stats", "steps", "tool_calls", "finish_reason"} <= set(out)
    call = out["tool_calls"][0]
    assert set(call) >= {"name", "arguments", "ok", "content"}
    assert call["name"] in ("read_file", "list_dir")
    if call["name"] == "list_dir":
        assert call["ok"] and "notes.txt" in call["content"]
    assert out["stats"]["generated_tokens"] > 0
    # One record of the run: the saved conversation (the JSONL transcript is gone; its key stays, null).
    assert out["transcript"] is None and not (home / "data" / "transcripts").exists()
    from localspec.conversations import ConversationStore

    with ConversationStore(home / "data" / "conversations.sqlite3") as store:
        conv = store.get(out["conversation"], turns=True)
    assert [m["role"] for m in conv.messages] == ["user", "assistant", "tool", "assistant"]
    assert conv.turns[-1]["finish_reason"] == out["finish_reason"] and conv.turns[-1]["steps"] == 2


@pytest.mark.slow  # run --tools in subprocesses
def test_run_tools_streams_and_defaults_to_the_current_directory(tiny_target, workspace, tmp_path):
    proc = localspec("run", "list the files", "--target", tiny_target, *AGENT_ARGS, "--approve", "never",
                     "--no-transcript", home=tmp_path / "home", cwd=workspace)
    assert proc.returncode == 0, proc.stderr
    assert "-> " in proc.stderr and "<- " in proc.stderr and "[step 2:" in proc.stderr
    assert "2 step(s)" in proc.stderr
    assert not (tmp_path / "home" / "data" / "transcripts").exists()


@pytest.mark.parametrize("extra, needle", [
    (("--workspace", "/no/such/dir"), "--workspace"),
    (("--raw",), "--raw cannot be combined"),
    (("--max-steps", "0"), "--max-steps"),
])
@pytest.mark.slow  # run --tools in subprocesses
def test_bad_agent_flags(tiny_target, tmp_path, extra, needle):
    proc = localspec("run", "x", "--target", tiny_target, "--tools", "--no-draft", *extra, home=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.startswith("error:") and needle in proc.stderr and len(proc.stderr.splitlines()) == 1


def _args(**kw):
    return Namespace(**{"read_only": False, "approve": "ask", **kw})


def test_approve_never_denies_and_auto_allows(workspace):
    policy, approver = _policy_and_approver(_args(approve="never"))
    res = Toolbox(workspace, policy, approver).call("write_file", {"path": "n.txt", "content": "x"})
    assert not res.ok and "denied" in res.error and not (workspace / "n.txt").exists()
    assert Toolbox(workspace, policy, approver).call("read_file", {"path": "notes.txt"}).ok  # reads still run
    policy, approver = _policy_and_approver(_args(approve="auto"))
    assert Toolbox(workspace, policy, approver).call("write_file", {"path": "a.txt", "content": "x"}).ok
    policy, _ = _policy_and_approver(_args(read_only=True))
    assert policy.mode == "read-only"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:  # the approver only asks when stdin is a terminal
        return True


def _request(workspace):
    captured = []
    Toolbox(workspace, "ask", lambda r: captured.append(r) or False).call(
        "write_file", {"path": "new.txt", "content": "x\n"})
    return captured[0]


@pytest.mark.parametrize("typed, decision", [
    ("y\n", Decision.ALLOW_ONCE), ("a\n", Decision.ALLOW_ALWAYS), ("n\n", Decision.DENY_ONCE),
    ("what\nd\n", Decision.DENY_ALWAYS),
])
def test_terminal_approver_keys(workspace, typed, decision):
    out = io.StringIO()
    assert terminal_approver(_Terminal(typed), out)(_request(workspace)) is decision
    assert "write_file" in out.getvalue() or "new.txt" in out.getvalue()


@pytest.mark.parametrize("stdin, why", [(io.StringIO("y\n"), "no terminal to ask on"),
                                        (_Terminal(""), "input ended before an answer")])
def test_nobody_to_ask_is_not_a_no(workspace, stdin, why):
    """Without a terminal (or when its input ends) the call does not run, and the model is told that nobody was
    asked: not "denied by the user", which a model reads as the user's choice."""
    out = io.StringIO()
    with pytest.raises(NotAsked):
        terminal_approver(stdin, out)(_request(workspace))
    assert why in out.getvalue()
    stdin.seek(0)
    res = Toolbox(workspace, "ask", terminal_approver(stdin, io.StringIO())).call(
        "write_file", {"path": "new.txt", "content": "x\n"})
    assert not res.ok and not (workspace / "new.txt").exists()
    assert "nobody was asked" in res.error and "denied" not in res.error


@pytest.mark.slow  # run --tools in a subprocess
def test_run_tools_without_a_terminal_tells_the_model_nobody_was_asked(tiny_target, workspace, tmp_path):
    proc = localspec("run", "write it", "--target", tiny_target, "--no-draft", "--tools", "--max-steps", "1",
                     "--tool-names", "write_file", "--tool-choice", "write_file", "--max-tokens", "8",
                     "--call-max-tokens", "48", "--json", "--workspace", workspace,
                     home=tmp_path / "home")  # stdin: /dev/null, and --approve ask (the default)
    assert proc.returncode == 0, proc.stderr
    [call] = json.loads(proc.stdout)["tool_calls"]
    assert call["name"] == "write_file" and not call["ok"]
    assert "nobody was asked (there is no terminal to ask on" in call["error"] and "denied" not in call["error"]
    assert "no terminal to ask on: not run" in proc.stderr


def test_agent_result_to_dict_is_what_run_tools_json_printed():
    """The JSON of `run --tools --json` is a contract: AgentResult.to_dict must give it byte for byte, as the CLI
    built it by hand before (that expression is copied here verbatim)."""
    result = AgentResult(text="Done: 2 files.", steps=2, finish_reason="stop",
                         stats=Stats(generated_tokens=30, prompt_tokens=50, target_passes=12),
                         tool_calls=[ToolCallRecord("c1", "list_dir", {"path": "."}, ToolResult.success("a\nb"), 1),
                                     ToolCallRecord("c2", "read_file", {"path": "ü"}, ToolResult.failure("no such"), 1,
                                                    ran=False)])
    target, draft = "/m/t.gguf", None
    before = json.dumps({
        "text": result.text, "reasoning": "",  # issue 18: what a reasoning model thought ("" for others)
        "steps": result.steps,
        "tool_calls": [{"name": c.name, "arguments": c.arguments, "ok": c.result.ok, "content": c.result.content,
                        "error": c.result.error} for c in result.tool_calls],
        "finish_reason": result.finish_reason, "error": result.error, "stats": result.stats.to_dict(),
        "time_to_first_token_s": None, "reused_prefix_tokens": 0,  # issue 28: the first token's wait, and why
        "target": target, "draft": draft,
        "transcript": None}, ensure_ascii=False)  # the JSONL transcript is gone (the store is the record)
    assert json.dumps(result.to_dict(target=target, draft=draft), ensure_ascii=False) == before


def test_the_printer_closes_the_thinking_block_before_anything_else(capsys):
    from localspec.agent.events import ToolCallStarted
    from localspec.turns import Delta
    from localspec.commands.agent_run import _Printer

    printer = _Printer("show")
    printer(Delta("let me look", "reasoning", origin="target", token=5, step=1))
    printer(Delta(" closer", "reasoning", origin="target", token=6, step=1))
    printer(ToolCallStarted(1, "c1", "list_dir", {"path": "."}))
    printer(Delta("more", "reasoning", origin="target", token=7, step=2))
    printer(Delta("Two files.", "text", origin="target", token=8, step=2))
    out = capsys.readouterr()
    assert out.err == '[thinking] let me look closer\n-> list_dir {"path": "."}\n[thinking] more\n'
    assert out.out == "Two files."


def test_an_unwritable_data_folder_is_a_warning_and_everything_is_closed(tiny_target, workspace, tmp_path, monkeypatch,
                                                                         capsys):
    """Nothing can be saved (the data folder is a file): the run goes on with a warning, and the models (and MCP
    servers) are closed by the command itself, not left to the exit handler."""
    from localspec.cli import main
    from localspec.launch.open import Opened

    home = tmp_path / "home"
    home.mkdir()
    (home / "data").write_text("not a folder")
    monkeypatch.setenv("LOCALSPEC_HOME", str(home))
    closed = []
    real_close = Opened.close
    monkeypatch.setattr(Opened, "close", lambda self: (closed.append(self), real_close(self)))
    code = main(["run", "list the files", "--target", str(tiny_target), *AGENT_ARGS, "--approve", "never",
                 "--workspace", str(workspace), "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "warning: the conversation will not be saved" in err and "unexpected" not in err
    assert json.loads(out)["conversation"] is None and len(closed) == 1
