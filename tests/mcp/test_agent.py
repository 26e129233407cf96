"""MCP tools in the agent loop with a real model (the tiny GGUF pair): the call is generated under the same
llguidance constraint from the server's schema, drafted by the same drafters, approved and run on the server; the
same from the command line (`run --tools --mcp-config`), with no server process left behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from localspec.agent import Agent
from localspec.runtime.context import ContextSettings
from localspec.runtime.pair import load_pair
from localspec.speculative.builder import build_engine
from localspec.speculative.decoder import GenParams
from localspec.speculative.drafting import DraftingConfig
from localspec.speculative.sources.past_calls import CallHistory
from localspec.tools import Decision, Policy, Toolbox
from localspec.turns import Delta
from tests.mcp.conftest import stdio_server, write_mcp_config
from tests.mcp.test_servers import Recorder, proc_cmdlines_with

pytestmark = pytest.mark.slow  # run --tools with real MCP server processes

ROOT = Path(__file__).resolve().parents[2]
MCP_TOOLS = ["read_note", "write_note"]  # two tools keep the prompt inside the tiny model's 2048-token window


@pytest.fixture(scope="module")
def pair(tiny_pair_paths):
    target, draft = tiny_pair_paths
    return load_pair(str(target), str(draft), ctx=ContextSettings(n_ctx=2048, n_threads=1))



def _server_answered(result) -> bool:
    """The call reached the server: it wrote the note, or refused the tiny model's nonsense name itself."""
    text = result.content if result.ok else result.error
    return (result.ok and text.startswith("saved ")) or "bad note name" in text or "no note called" in text


def test_generated_call_to_an_mcp_tool_runs_under_approval(pair, tmp_path, home, notes):
    from localspec.mcp import attach_servers

    history = CallHistory()
    engine = build_engine(pair, DraftingConfig(drafters=("model", "schema", "history", "ngram")), history=history)
    approver = Recorder(Decision.ALLOW_ONCE)
    toolbox = Toolbox(tmp_path, Policy("ask"), approver)
    mcp = attach_servers(toolbox, write_mcp_config(tmp_path / "mcp.json", {"notes": stdio_server(notes,
                                                                                                   trusted=True)}))
    try:
        mcp.wait()
        agent = Agent(engine, toolbox, params=GenParams(max_tokens=6), tools=MCP_TOOLS, call_max_tokens=128,
                      max_steps=1)
        assert [s["function"]["name"] for s in agent.tool_specs()] == MCP_TOOLS
        events = []
        result = agent.run("save a note", tool_choice="write_note", on_event=events.append)
        call = result.tool_calls[0]
        assert call.name == "write_note" and call.ran
        # Valid under the server's schema: exactly the required string arguments.
        assert set(call.arguments) == {"name", "text"} and all(isinstance(v, str) for v in call.arguments.values())
        (request,) = approver.requests  # not read-only: asked, with server, tool and arguments
        assert request.tool == "write_note" and request.arguments == call.arguments and "notes" in request.summary
        assert _server_answered(call.result), call.result
        if call.result.ok:
            assert (notes / f"{call.arguments['name']}.txt").read_text() == call.arguments["text"]
        # Drafted like any other call: the grammar forces the tool name and keys (schema drafter), and the history
        # drafter keeps the finished call.
        call_origins = {e.origin for e in events if isinstance(e, Delta) and e.kind == "call"}
        assert "schema" in call_origins, call_origins
        assert any('"write_note"' in c for c in history.calls)

        # The read-only tool runs without asking, in read-only mode too.
        toolbox.policy.mode = "read-only"
        agent = Agent(engine, toolbox, params=GenParams(max_tokens=6), tools=MCP_TOOLS, call_max_tokens=128,
                      max_steps=1)
        assert [s["function"]["name"] for s in agent.tool_specs()] == ["read_note"]
        result = agent.run("read my todo note", tool_choice="read_note")
        call = result.tool_calls[0]
        assert call.name == "read_note" and call.ran
        assert call.result.ok or "bad note name" in call.result.error or "no note called" in call.result.error
        assert len(approver.requests) == 1
    finally:
        mcp.close()


def localspec(*args, home: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, LOCALSPEC_HOME=str(home),
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "localspec", *map(str, args)], cwd=ROOT, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=180)


@pytest.mark.parametrize("approve", ["auto", "never"])
def test_run_tools_with_mcp_config(tiny_target, tmp_path, notes, approve):
    tag = uuid.uuid4().hex
    cfg = write_mcp_config(tmp_path / "mcp.json", {
        "notes": stdio_server(notes, "--spawn-child", "--tag", tag),
        "broken": stdio_server(notes, "--mode", "fail-start")})
    proc = localspec("run", "save a note", "--target", tiny_target, "--no-draft", "--tools", "--max-steps", "1",
                     "--max-tokens", "6", "--call-max-tokens", "64", "--threads", "1", "--mcp-config", cfg,
                     "--tool-names", "read_note,write_note", "--tool-choice", "write_note", "--approve", approve,
                     "--workspace", tmp_path, "--json", home=tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    call = out["tool_calls"][0]
    assert call["name"] == "write_note" and set(call["arguments"]) == {"name", "text"}
    if approve == "auto":
        text = call["content"] if call["ok"] else call["error"]
        assert text.startswith("saved ") or "bad note name" in text, call
    else:
        assert not call["ok"] and "denied by the user" in call["error"]
        assert list(notes.iterdir()) == [notes / "todo.txt"]
    notes_lines = [ln for ln in proc.stderr.splitlines() if "broken" in ln]
    assert len(notes_lines) == 1 and "failed to start" in notes_lines[0] and "Traceback" not in proc.stderr
    assert proc_cmdlines_with(tag) == []  # the server and the child it started are gone with the session


def test_unknown_mcp_tool_name_is_one_line(tiny_target, tmp_path, notes):
    cfg = write_mcp_config(tmp_path / "mcp.json", {"notes": stdio_server(notes)})
    proc = localspec("run", "x", "--target", tiny_target, "--no-draft", "--tools", "--threads", "1",
                     "--mcp-config", cfg, "--tool-names", "read_note,nope", "--workspace", tmp_path,
                     home=tmp_path / "home")
    assert proc.returncode == 1 and "unknown tool(s) nope" in proc.stderr and "read_note" in proc.stderr
    assert "Traceback" not in proc.stderr
