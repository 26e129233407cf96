"""The agent loop on real llama.cpp: a scripted GGUF (tests/scripted_gguf.py, Qwen2.5's template and tokens) whose
greedy reply is known token for token ("hello world", then a list_dir call), so every run below has one exact
outcome; and the tiny GGUF pair for what sampling must never break (schema-valid calls) and for formats without
JSON bodies."""

from __future__ import annotations

import threading

import pytest
from pydantic import ValidationError

from localspec.agent import Agent, Done, MessageAdded, Notice, StepStats, ToolCallFinished, ToolCallStarted
from localspec.errors import ConfigError
from localspec.runtime.context import ContextSettings
from localspec.runtime.pair import load_pair
from localspec.speculative.builder import build_engine
from localspec.speculative.decoder import GenParams
from localspec.speculative.sampling import SamplingParams
from localspec.tools import Toolbox
from localspec.tools.args import ReadFileArgs
from localspec.turns import Delta
from tests.scripted_gguf import write_scripted_gguf

TOOLS = ["read_file", "list_dir"]  # two tools keep the prompt inside the tiny model's 2048-token window
# The scripted reply: words, then the model's own `<tool_call>` token; the schema writes the call from there.
SCRIPT = ["hello", "▁world", "<tool_call>", "{", "}}", "</tool_call>", "<|im_end|>"]
CALL_TEXT = '<tool_call>\n{"name": "list_dir", "arguments": {}}\n'
LISTING = "workspace root: 1 entry\nnotes.txt  (17 B)"


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    model = write_scripted_gguf(tmp_path_factory.mktemp("scripted") / "agent.gguf", "qwen2.5", SCRIPT)
    # One thread: llama.cpp's spinning worker threads slow down badly when the cores are shared (CI, parallel runs).
    pair = load_pair(str(model), None, ctx=ContextSettings(n_ctx=2048, n_threads=1))
    yield build_engine(pair)
    pair.close()


@pytest.fixture(scope="module")
def tiny_engine(tiny_pair_paths):
    target, draft = tiny_pair_paths
    pair = load_pair(str(target), str(draft), ctx=ContextSettings(n_ctx=2048, n_threads=1))
    yield build_engine(pair)
    pair.close()


@pytest.fixture
def workspace_files():
    return {"notes.txt": "hello from notes\n"}


def _agent(engine, workspace, **kw):
    kw.setdefault("params", GenParams(max_tokens=20))
    kw.setdefault("tools", ["list_dir"])
    kw.setdefault("call_max_tokens", 64)
    kw.setdefault("max_calls_per_turn", 1)
    return Agent(engine, Toolbox(workspace, kw.pop("policy", "auto"), kw.pop("approver", None)), **kw)


def _text(events, kind):
    return "".join(e.text for e in events if isinstance(e, Delta) and e.kind == kind)


def _without_ids(messages):
    out = []
    for m in messages:
        m = {k: v for k, v in m.items() if k != "tool_call_id"}
        if "tool_calls" in m:
            m["tool_calls"] = [{k: v for k, v in c.items() if k != "id"} for c in m["tool_calls"]]
        out.append(m)
    return out


def test_an_answer_then_a_call_runs_it_and_reports_every_step(engine, workspace):
    events = []
    agent = _agent(engine, workspace, max_steps=1)
    result = agent.run("ls", on_event=events.append)
    assert (result.steps, result.finish_reason, result.text, result.error) == (1, "max_steps", "hello world", None)
    assert [(c.name, c.arguments, c.result.ok, c.result.content, c.step, c.ran) for c in result.tool_calls] == \
        [("list_dir", {}, True, LISTING, 1, True)]
    assert (_text(events, "text"), _text(events, "call")) == ("hello world", CALL_TEXT)
    assert all(e.origin for e in events if isinstance(e, Delta))
    kinds = [e.type for e in events if not isinstance(e, Delta)]
    assert kinds[:2] == ["message", "prompt"]  # how far the prompt is read comes before any text
    assert [k for k in kinds if k != "prompt"] == \
        ["message", "stats", "message", "tool_call", "tool_result", "message", "done"]
    assert _without_ids(agent.messages) == [
        {"role": "user", "content": "ls"},
        {"role": "assistant", "content": "hello world", "tool_calls": [
            {"type": "function", "function": {"name": "list_dir", "arguments": "{}"}}]},
        {"role": "tool", "name": "list_dir", "content": LISTING}]
    call = result.tool_calls[0]
    assert agent.messages[1]["tool_calls"][0]["id"] == call.id == agent.messages[2]["tool_call_id"]
    assert [e.message for e in events if isinstance(e, MessageAdded)] == agent.messages


def test_the_last_step_has_tools_off(engine, workspace):
    events = []
    agent = _agent(engine, workspace, max_steps=2)
    result = agent.run("ls", on_event=events.append)
    # Step 2 could not call: the model began its call there anyway, so the step limit is what ended the run.
    assert (result.steps, result.finish_reason, result.text) == (2, "max_steps", "hello world")
    assert [c.step for c in result.tool_calls] == [1]
    assert [e.step for e in events if isinstance(e, StepStats)] == [1, 2]
    assert agent.messages[-1] == {"role": "assistant", "content": "hello world"}
    assert result.stats.generated_tokens == sum(e.stats.generated_tokens for e in events if isinstance(e, StepStats))
    three = _agent(engine, workspace, max_steps=3).run("ls")
    assert ([c.step for c in three.tool_calls], three.steps, three.finish_reason) == ([1, 2], 3, "max_steps")


def test_tool_choice_none_answers_in_text(engine, workspace):
    events = []
    result = _agent(engine, workspace).run("ls", tool_choice="none", on_event=events.append)
    assert (result.steps, result.tool_calls, result.finish_reason, result.text) == (1, [], "stop", "hello world")
    assert _text(events, "call") == ""


def test_required_starts_the_call_at_once(engine, workspace):
    events = []
    result = _agent(engine, workspace, max_steps=1).run("ls", tool_choice="required", on_event=events.append)
    assert (result.steps, result.finish_reason) == (1, "max_steps")
    assert [(c.name, c.arguments, c.result.content) for c in result.tool_calls] == [("list_dir", {}, LISTING)]
    assert _text(events, "text") == "" and _text(events, "call") == CALL_TEXT


def test_cancel_during_generation_stops_the_run(engine, workspace):
    cancel = threading.Event()
    events = []

    def on_event(e):
        events.append(e)
        if isinstance(e, Delta):
            cancel.set()

    agent = _agent(engine, workspace, params=GenParams(max_tokens=200))
    result = agent.run("ls", cancel=cancel, on_event=on_event)
    assert (result.finish_reason, result.tool_calls, result.steps) == ("cancelled", [], 1)
    assert result.stats.finish_reason == "cancelled"
    # Stopped before the call: the words were already verified when the first piece of them reached the UI.
    assert (_text(events, "text"), _text(events, "call")) == ("hello world", "")
    assert isinstance(events[-1], Done)
    assert agent.messages[-1] == {"role": "assistant", "content": "hello world", "cancelled": True}  # kept, marked


def test_cancel_before_tools_run_leaves_them_unrun(engine, workspace):
    cancel = threading.Event()
    events = []

    def on_event(e):
        events.append(e)
        if isinstance(e, ToolCallStarted):
            cancel.set()

    agent = _agent(engine, workspace)
    result = agent.run("ls", cancel=cancel, on_event=on_event)
    assert (result.finish_reason, result.steps) == ("cancelled", 1)
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert [(e.name, e.ran, e.result.ok, e.result.error) for e in finished] == \
        [("list_dir", False, False, "cancelled by the user; the tool did not run")]
    # Every call still has a result message, so the conversation stays well-formed for the next turn.
    assert agent.messages[-1]["role"] == "tool"
    assert agent.messages[-1]["content"] == finished[0].result.for_model()


def test_long_tool_results_are_cut_for_the_model(engine, workspace):
    agent = _agent(engine, workspace, max_steps=1, result_chars=20)
    result = agent.run("ls")
    assert agent.messages[-1]["content"] == LISTING[:20] + \
        f"\n[truncated for the model: showing the first 20 of {len(LISTING)} characters]"
    assert result.tool_calls[0].result.content == LISTING  # the full result is still in the record


def test_messages_persist_across_runs(engine, workspace):
    agent = _agent(engine, workspace, system="be brief")
    agent.run("first", tool_choice="none")
    agent.run("second", tool_choice="none")
    assert agent.messages == [{"role": "system", "content": "be brief"}, {"role": "user", "content": "first"},
                              {"role": "assistant", "content": "hello world"}, {"role": "user", "content": "second"},
                              {"role": "assistant", "content": "hello world"}]
    agent.reset()
    assert agent.messages == [{"role": "system", "content": "be brief"}]


def test_an_exception_is_reported_as_done_and_propagates(engine, workspace):
    events = []

    def on_event(e):
        events.append(e)
        if isinstance(e, ToolCallStarted):
            raise RuntimeError("ui broke")

    agent = _agent(engine, workspace)
    with pytest.raises(RuntimeError, match="ui broke"):
        agent.run("ls", on_event=on_event)
    # The Done event tells a recorder how the turn ended (the conversation store keeps it).
    assert isinstance(events[-1], Done) and events[-1].result is agent.last_result
    assert (agent.last_result.finish_reason, agent.last_result.error) == ("error", "RuntimeError: ui broke")


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


def test_constrained_arguments_always_match_the_schema(tiny_engine, workspace):
    """Sampled calls with a free-text argument: each completes as a schema-valid call (wrapping up near the token
    limit) or is reported as cut off and not run. Only a rule the JSON Schema cannot state (end_line >= start_line)
    may still fail, and then the tool reports it instead of running."""
    for seed in range(4):
        sampling = SamplingParams(temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, seed=seed)
        notices = []
        agent = _agent(tiny_engine, workspace, max_steps=1, tools=TOOLS, max_calls_per_turn=8,
                       params=GenParams(max_tokens=4, sampling=sampling))
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


def test_formats_without_json_bodies_are_generated_freely_and_parsed(tiny_engine, workspace):
    """Gemma-style call bodies are not JSON, so no grammar applies: the turn starts with the call prefix and the
    format's parser reads the result; nonsense is reported as a notice, never run."""
    from localspec.prompting.formats import GEMMA_TOOL_CODE

    events = []
    agent = _agent(tiny_engine, workspace, max_steps=1, tools=TOOLS, call_format=GEMMA_TOOL_CODE,
                   params=GenParams(max_tokens=12))
    result = agent.run("list", tool_choice="required", on_event=events.append)
    call_text = "".join(e.text for e in events if isinstance(e, Delta) and e.kind == "call")
    assert call_text.startswith("```tool_code\n")
    assert result.tool_calls == [] or all(c.name in TOOLS for c in result.tool_calls)
    if not result.tool_calls:
        assert any(isinstance(e, Notice) for e in events) and result.finish_reason == "length"
