"""The agent loop with its turns on a remote OpenAI-compatible server (issue 28, part 3): tool calls the server
makes run here, under the same approvals, MCP servers' tools included. The server is localspec's own (`serve`, on the
tiny GGUF), which holds any model to a forced call: llama-server is tested in tests/remote/test_llama_server.py."""

from __future__ import annotations

import json

import pytest

from tests.mcp.conftest import stdio_server, write_mcp_config
from tests.cli_helpers import localspec
from tests.serve_helpers import running_server


@pytest.fixture(scope="module")
def server(chat_pair):  # noqa: F811
    with running_server(chat_pair[0], n_ctx=8192) as (url, _):
        yield url + "/v1"


@pytest.fixture
def workspace_files():
    return {"notes.txt": "buy milk\n"}


def agent(server, workspace, home, *args) -> dict:
    proc = localspec("run", "please", "--tools", "--backend", "openai", "--base-url", server, "--workspace",
                     workspace, "--max-steps", "2", "--max-tokens", "24", "--call-max-tokens", "64", "--json", *args,
                     home=home)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("tools", [(), ("--tools",)])
def test_a_base_url_without_v1_is_told_where_the_api_is(server, tmp_path, tools):
    """The server root answers 404 for /models: the one-line error says the API is under /v1 and gives the URL."""
    root = server.removesuffix("/v1")
    proc = localspec("run", "hi", *tools, "--backend", "openai", "--base-url", root, "--max-tokens", "2",
                     home=tmp_path / "home")
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1, proc.stderr
    assert "HTTP 404" in lines[0] and lines[0].endswith(f"try the base URL {root}/v1)")


@pytest.mark.slow  # 1-4 s each (the fast tier's budget: under a minute)
def test_a_plain_run_on_the_server_is_saved_and_carried_on(server, tmp_path):
    from localspec.conversations import ConversationStore

    home = tmp_path / "home"

    def plain(prompt, *args):
        proc = localspec("run", prompt, "--backend", "openai", "--base-url", server, "--max-tokens", "4", *args,
                         home=home)
        assert proc.returncode == 0, proc.stderr
        return proc

    first = json.loads(plain("my name is Ada", "--json").stdout)
    cid = first["conversation"]
    again = plain("what is my name?", "--continue")
    assert again.stderr.strip().endswith(f"; saved as {cid}]")
    with ConversationStore(home / "data" / "conversations.sqlite3") as store:
        conv = store.get(cid, turns=True)
    assert [m["content"] for m in conv.messages if m["role"] == "user"] == ["my name is Ada", "what is my name?"]
    assert conv.pair == f"tiny @ {server.split('://', 1)[1]}" and conv.params["backend"] == "openai"
    # The server was sent the conversation: the second turn's prompt holds the first exchange.
    assert conv.turns[1]["stats"]["prompt_tokens"] > first["usage"]["prompt_tokens"] + 4


@pytest.mark.slow  # 1-4 s each (the fast tier's budget: under a minute)
def test_a_forced_call_is_made_there_and_run_here(server, workspace, tmp_path):
    out = agent(server, workspace, tmp_path / "home", "--tool-names", "read_file,list_dir", "--tool-choice",
                "list_dir", "--approve", "auto")
    call = out["tool_calls"][0]
    assert call["name"] == "list_dir"  # a named tool_choice reached the server
    if call["ok"]:
        assert "notes.txt" in call["content"]  # the tool ran here, in the workspace
    assert out["steps"] == 2 and out["stats"]["source"] == "localspec"  # the server's own figures


def test_approvals_apply_to_the_servers_calls(server, workspace, tmp_path):
    out = agent(server, workspace, tmp_path / "home", "--tool-names", "write_file,list_dir", "--tool-choice",
                "write_file", "--approve", "never")
    call = out["tool_calls"][0]
    assert call["name"] == "write_file" and not call["ok"] and "denied" in call["error"]
    assert sorted(p.name for p in workspace.iterdir()) == ["notes.txt"]  # nothing written


@pytest.mark.slow  # 1-4 s each (the fast tier's budget: under a minute)
def test_mcp_tools_are_offered_to_the_server_and_run_here(server, workspace, tmp_path, notes):
    mcp = write_mcp_config(tmp_path / "mcp.json", {"notes": stdio_server(notes)})
    out = agent(server, workspace, tmp_path / "home", "--mcp-config", mcp, "--tool-names", "read_note,list_dir",
                "--tool-choice", "read_note", "--approve", "auto")
    call = out["tool_calls"][0]
    assert call["name"] == "read_note"
    text = call["content"] if call["ok"] else call["error"]
    assert call["ok"] and "buy milk" in text or "no note called" in text or "bad note name" in text  # it answered


@pytest.fixture
def notes(tmp_path):
    d = tmp_path / "notes"
    d.mkdir()
    (d / "todo.txt").write_text("buy milk\n", encoding="utf-8")
    return d


def test_run_tools_saves_the_server_as_the_app_does(server, workspace, tmp_path, monkeypatch):
    """Issue 39.10: `run --tools` through a server and the app on the same server save the conversation under the
    same pair (the model that answers, at that server) and the same backend parameters."""
    from localspec.conversations import open_store
    from localspec.launch.flags import RunFlags
    from localspec.tui.launch_options import AppOptions
    from localspec.tui.session import ChatSession

    home = tmp_path / "home"
    out = agent(server, workspace, home, "--tool-choice", "none")
    monkeypatch.setenv("LOCALSPEC_HOME", str(home))
    with open_store() as store:
        saved = store.get(out["conversation"], messages=False)
    session = ChatSession(AppOptions(flags=RunFlags(backend="openai", base_url=server), workspace=workspace,
                                     record=False))
    try:
        session.load(session.initial_selection())
        app = session.conversation_meta()
    finally:
        session.shutdown()
    which = ("backend", "base_url", "model", "pair_name", "target", "draft")
    assert saved.pair == app["pair"] and "remote" not in saved.pair  # the model's name, not "remote"
    assert {k: saved.params.get(k) for k in which} == {k: app["params"].get(k) for k in which}
