"""The agent loop on the tiny real GGUF pair (fast): constrained calls, step limit, cancellation, transcript,
tool choices. The tiny model writes nonsense text but, under the schema constraint, valid calls."""

from __future__ import annotations

import threading

import pytest
from pydantic import ValidationError

from localspec.speculative import registry
from localspec.agent import (Agent, Done, MessageAdded, Notice, StepStats, TextDelta, ToolCallFinished,
                             ToolCallStarted, Transcript, read_transcript)
from localspec.errors import ConfigError
from localspec.runtime.context import ContextSettings
from localspec.runtime.pair import load_pair
from localspec.speculative.builder import build_engine
from localspec.speculative.engine import GenParams
from localspec.speculative.sampling import SamplingParams
from localspec.tools import Toolbox
from localspec.tools.args import ListDirArgs, ReadFileArgs

TOOLS = ["read_file", "list_dir"]  # two tools keep the prompt inside the tiny model's 2048-token window


@pytest.fixture(scope="module")
def engine(tiny_pair_paths):
    target, draft = tiny_pair_paths
    # One thread: llama.cpp's spinning worker threads slow down badly when the cores are shared (CI, parallel runs).
    pair = load_pair(str(target), str(draft), ctx=ContextSettings(n_ctx=2048, n_threads=1))
    return build_engine(pair)


@pytest.fixture
def workspace(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("hello from notes\n")
    return ws


def _agent(engine, workspace, **kw):
    kw.setdefault("params", GenParams(max_tokens=6))
    kw.setdefault("tools", TOOLS)
    kw.setdefault("call_max_tokens", 64)
    return Agent(engine, Toolbox(workspace, kw.pop("policy", "auto"), kw.pop("approver", None)), **kw)


def test_required_call_is_valid_and_runs(engine, workspace):
    events = []
    agent = _agent(engine, workspace, max_steps=1)
    result = agent.run("list the files", tool_choice="required", on_event=events.append)
    assert result.steps == 1 and result.finish_reason == "max_steps"  # one step, and it called a tool
    assert len(result.tool_calls) >= 1
    call = result.tool_calls[0]
    assert call.name in TOOLS and call.ran
    {"read_file": ReadFileArgs, "list_dir": ListDirArgs}[call.name].model_validate(call.arguments)
    # Text deltas carry the call being written, with the origin of every token.
    call_text = "".join(e.text for e in events if isinstance(e, TextDelta) and e.kind == "call")
    assert call_text.startswith("<tool_call>\n{\"name\": \"") and "</tool_call>" in call_text
    assert all(e.origin in registry.ORIGINS for e in events
               if isinstance(e, TextDelta))
    # The conversation holds the call in OpenAI form and the result as a tool message.
    assistant, tool = agent.messages[-2], agent.messages[-1]
    assert assistant["tool_calls"][0]["id"] == call.id == tool["tool_call_id"]
    if call.name == "list_dir":
        assert call.result.ok and "notes.txt" in tool["content"]


def test_constrained_arguments_always_match_the_schema(engine, workspace):
    """Sampled calls with a free-text argument: each completes as a schema-valid call (wrapping up near the token
    limit) or is reported as cut off and not run. Only a rule the JSON Schema cannot state (end_line >= start_line)
    may still fail, and then the tool reports it instead of running."""
    for seed in range(4):
        sampling = SamplingParams(temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, seed=seed)
        notices = []
        agent = _agent(engine, workspace, max_steps=1, params=GenParams(max_tokens=4, sampling=sampling))
        result = agent.run("read notes.txt", tool_choice="read_file",
                           on_event=lambda e: notices.append(e.message) if isinstance(e, Notice) else None)
        for call in result.tool_calls:
            assert call.name == "read_file"
            try:
                ReadFileArgs.model_validate(call.arguments)
            except ValidationError as err:
                assert all(e["type"] == "value_error" and not e["loc"] for e in err.errors())  # cross-field only
                assert not call.result.ok and "end_line" in call.result.error
            else:
                assert "invalid arguments" not in (call.result.error or "")
        if not result.tool_calls:
            assert result.finish_reason == "length" and any("cut off" in n for n in notices)


def test_step_limit_last_step_has_tools_off(engine, workspace):
    events = []
    agent = _agent(engine, workspace, max_steps=2)
    result = agent.run("list the files", tool_choice="required", on_event=events.append)
    assert result.steps == 2
    assert [e.step for e in events if isinstance(e, StepStats)] == [1, 2]
    assert {c.step for c in result.tool_calls} == {1}  # the final step could not call tools
    assert agent.messages[-1]["role"] == "assistant" and "tool_calls" not in agent.messages[-1]
    assert result.finish_reason in ("stop", "length", "max_steps")
    assert result.stats.generated_tokens == sum(e.stats.generated_tokens for e in events if isinstance(e, StepStats))


def test_tool_choice_none_answers_in_text(engine, workspace):
    result = _agent(engine, workspace).run("hello", tool_choice="none")
    assert result.steps == 1 and result.tool_calls == [] and result.finish_reason == "length"
    assert result.text


def test_cancel_during_generation_stops_the_run(engine, workspace):
    cancel = threading.Event()
    events = []

    def on_event(e):
        events.append(e)
        if isinstance(e, TextDelta):
            cancel.set()

    agent = _agent(engine, workspace, params=GenParams(max_tokens=200))
    result = agent.run("list the files", tool_choice="required", cancel=cancel, on_event=on_event)
    assert result.finish_reason == "cancelled"
    assert result.tool_calls == [] and result.steps == 1
    assert result.stats.finish_reason == "cancelled"
    assert sum(1 for e in events if isinstance(e, TextDelta)) < 5  # stopped within a verify step or so
    assert isinstance(events[-1], Done)


def test_cancel_before_tools_run_leaves_them_unrun(engine, workspace):
    cancel = threading.Event()
    events = []

    def on_event(e):
        events.append(e)
        if isinstance(e, ToolCallStarted):
            cancel.set()

    agent = _agent(engine, workspace)
    result = agent.run("list the files", tool_choice="required", cancel=cancel, on_event=on_event)
    assert result.finish_reason == "cancelled" and result.steps == 1
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert finished and not any(e.ran for e in finished)
    assert all(not e.result.ok and "did not run" in e.result.error for e in finished)
    # Every call still has a result message, so the conversation stays well-formed for the next turn.
    assert agent.messages[-1]["role"] == "tool" and "cancelled" in agent.messages[-1]["content"]


def test_transcript_records_the_session(engine, workspace, tmp_path, monkeypatch):
    monkeypatch.setenv("LOCALSPEC_HOME", str(tmp_path / "home"))
    transcript = Transcript.open()
    assert transcript.path.parent == tmp_path / "home" / "data" / "transcripts"
    agent = _agent(engine, workspace, max_steps=2, transcript=transcript)
    result = agent.run("list the files", tool_choice="required")
    transcript.close()
    assert result.transcript == str(transcript.path)
    lines = read_transcript(transcript.path)
    kinds = [x["type"] for x in lines]
    assert kinds[0] == "session" and kinds[-1] == "done"
    for kind in ("message", "tool_call", "tool_result", "stats"):
        assert kind in kinds
    assert kinds.index("tool_call") < kinds.index("tool_result")
    first_result = next(x for x in lines if x["type"] == "tool_result")
    assert first_result["content"] == result.tool_calls[0].result.content
    assert [x["message"]["role"] for x in lines if x["type"] == "message"] == \
        [m["role"] for m in agent.messages]
    assert lines[-1]["steps"] == 2 and lines[0]["tools"] == TOOLS


def test_long_tool_results_are_cut_for_the_model(engine, workspace):
    for i in range(40):
        (workspace / f"file_{i:02d}.txt").write_text("x")
    agent = _agent(engine, workspace, max_steps=1, result_chars=120)
    result = agent.run("list", tool_choice="list_dir")
    tool_msg = agent.messages[-1]
    assert tool_msg["role"] == "tool" and "[truncated for the model" in tool_msg["content"]
    assert len(result.tool_calls[0].result.content) > 120  # the full result is still in the record


def test_messages_persist_across_runs(engine, workspace):
    agent = _agent(engine, workspace, system="be brief")
    agent.run("first", tool_choice="none")
    agent.run("second", tool_choice="none")
    roles = [m["role"] for m in agent.messages]
    assert roles == ["system", "user", "assistant", "user", "assistant"]
    agent.reset()
    assert agent.messages == [{"role": "system", "content": "be brief"}]


def test_bad_options_are_clear_errors(engine, workspace):
    with pytest.raises(ConfigError, match="unknown tool"):
        _agent(engine, workspace, tools=["nope"])
    with pytest.raises(ConfigError, match="max_steps"):
        _agent(engine, workspace, max_steps=0)
    agent = _agent(engine, workspace)
    with pytest.raises(ConfigError, match="invalid tool_choice"):
        agent.run("x", tool_choice="sometimes")
    # read-only mode offers no write tools, so they cannot be forced either
    ro = Agent(engine, Toolbox(workspace, "read-only"), tools=["read_file", "write_file"])
    assert [s["function"]["name"] for s in ro.tool_specs()] == ["read_file"]
    with pytest.raises(ConfigError, match="invalid tool_choice"):
        ro.run("x", tool_choice="write_file")


def test_message_events_mirror_the_conversation(engine, workspace):
    events = []
    agent = _agent(engine, workspace, max_steps=2)
    agent.run("list", tool_choice="required", on_event=events.append)
    assert [e.message for e in events if isinstance(e, MessageAdded)] == agent.messages


def test_an_exception_ends_the_transcript_and_propagates(engine, workspace, tmp_path):
    transcript = Transcript.open("boom", tmp_path)
    agent = _agent(engine, workspace, transcript=transcript)

    def on_event(e):
        if isinstance(e, ToolCallStarted):
            raise RuntimeError("ui broke")

    with pytest.raises(RuntimeError, match="ui broke"):
        agent.run("list", tool_choice="required", on_event=on_event)
    transcript.close()
    last = read_transcript(transcript.path)[-1]
    assert last["type"] == "done" and last["finish_reason"] == "error" and "ui broke" in last["error"]
    assert agent.last_result.finish_reason == "error"


def test_formats_without_json_bodies_are_generated_freely_and_parsed(engine, workspace):
    """Gemma-style call bodies are not JSON, so no grammar applies: the turn starts with the call prefix and the
    format's parser reads the result; nonsense is reported as a notice, never run."""
    from localspec.chat.formats import GEMMA_TOOL_CODE

    events = []
    agent = _agent(engine, workspace, max_steps=1, call_format=GEMMA_TOOL_CODE, params=GenParams(max_tokens=12))
    result = agent.run("list", tool_choice="required", on_event=events.append)
    call_text = "".join(e.text for e in events if isinstance(e, TextDelta) and e.kind == "call")
    assert call_text.startswith("```tool_code\n")
    assert result.tool_calls == [] or all(c.name in TOOLS for c in result.tool_calls)
    if not result.tool_calls:
        assert any(isinstance(e, Notice) for e in events) and result.finish_reason == "length"
