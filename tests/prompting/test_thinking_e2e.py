"""Reasoning models end to end on real llama.cpp: GGUFs with the real Qwen3 and DeepSeek-R1-Distill templates whose
greedy output is scripted (tests/scripted_gguf.py), through the agent loop, `localspec run` and `localspec serve`."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile

import pytest

from localspec.agent import Agent
from localspec.prompting import thinking as think
from localspec.prompting.prompt import render_prompt
from localspec.runtime.context import ContextSettings
from localspec.runtime.pair import load_pair
from localspec.speculative.builder import build_engine
from localspec.speculative.decoder import GenParams
from localspec.speculative.drafting import TARGET_ONLY
from localspec.tools import Policy, Toolbox
from tests.cli_helpers import run_localspec
from tests.scripted_gguf import QWEN3_ANSWER, write_scripted_gguf

# After the reasoning, a call: the grammar forces `<tool_call>\n{"name": "list_dir", "arguments": {`, then the script
# closes the arguments ("}}") and ends the turn after `</tool_call>`.
QWEN3_CALL = ["<think>", "read", "▁file", "</think>", "<tool_call>", "{", "}}", "</tool_call>", "<|im_end|>"]
# DeepSeek-R1's prompt ends in `<think>\n`: the model writes only the end of the block.
R1_ANSWER = ["what", "▁is", "▁it", "</think>", "hello", "▁world", "<｜end▁of▁sentence｜>"]
# Qwen3 with thinking on may answer without opening a block.
QWEN3_PLAIN = ["hello", "▁world", "<|im_end|>"]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("reasoning")
    return {"qwen3": write_scripted_gguf(d / "qwen3.gguf", "qwen3", QWEN3_ANSWER),
            "qwen3-call": write_scripted_gguf(d / "qwen3-call.gguf", "qwen3", QWEN3_CALL),
            "r1": write_scripted_gguf(d / "r1.gguf", "deepseek-r1-qwen", R1_ANSWER),
            "qwen3-plain": write_scripted_gguf(d / "qwen3-plain.gguf", "qwen3", QWEN3_PLAIN)}


def _agent(path, **kw):
    pair = load_pair(str(path), None, ctx=ContextSettings(n_ctx=1024, n_threads=1))
    engine = build_engine(pair, TARGET_ONLY)
    toolbox = Toolbox(tempfile.mkdtemp(), Policy("read-only"))
    return pair, Agent(engine, toolbox, params=GenParams(max_tokens=40), **kw)


def test_an_answer_without_a_block_is_kept_whole(models):
    """The text released while watching for `</think>` lags behind the tokens: the answer is what they say."""
    pair, agent = _agent(models["qwen3-plain"], tools=[])
    try:
        events = []
        result = agent.run("hi", on_event=events.append)
        assert (result.text, result.reasoning) == ("hello world", "")
        assert "".join(e.text for e in events if e.type == "text" and e.kind == "text") == "hello world"
    finally:
        pair.close()


@pytest.mark.parametrize("name", ["qwen3", "r1"])
def test_agent_splits_reasoning_from_the_answer(models, name):
    pair, agent = _agent(models[name], tools=[])
    try:
        events = []
        result = agent.run("hi", on_event=events.append)
        assert (result.text, result.reasoning, result.finish_reason) == ("hello world", "what is it", "stop")
        texts = [(e.kind, e.text) for e in events if e.type == "text"]
        assert "".join(t for k, t in texts if k == "reasoning") == "what is it"
        assert "".join(t for k, t in texts if k == "text") == "hello world"
        assert [k for k, _ in texts] == sorted((k for k, _ in texts), key=lambda k: k != "reasoning")  # first
        assert agent.messages[-1] == {"role": "assistant", "content": "hello world", "reasoning_content": "what is it"}
        step = next(e for e in events if e.type == "stats")
        phases = dict(step.generations)
        # its own token count: `<think> what is it </think>` (R1: the prompt wrote `<think>`)
        assert phases["reasoning"].generated_tokens == (5 if name == "qwen3" else 4)
        assert result.to_dict()["reasoning"] == "what is it"
    finally:
        pair.close()


def test_tool_call_after_reasoning_and_its_reasoning_kept_for_the_next_step(models):
    pair, agent = _agent(models["qwen3-call"], tools=["list_dir"], max_steps=2, call_max_tokens=30)
    try:
        events = []
        result = agent.run("what is here?", on_event=events.append)
        assert [(c.name, c.arguments) for c in result.tool_calls] == [("list_dir", {})]
        call_msg = agent.messages[1]
        assert call_msg["role"] == "assistant" and call_msg["reasoning_content"] == "read file"
        assert call_msg["content"] == "" and call_msg["tool_calls"][0]["function"]["name"] == "list_dir"
        kinds = [e.kind for e in events if e.type == "text"]
        assert kinds.index("call") > kinds.index("reasoning")
        # Qwen3's template keeps the reasoning of a tool-call step of the current request in the next prompt.
        prompt = render_prompt(pair.target, agent.messages, agent.tool_specs(),
                               template_vars=think.template_vars(pair.target.chat_template, True))
        assert "<think>\nread file\n</think>\n\n<tool_call>\n{\"name\": \"list_dir\"" in prompt
    finally:
        pair.close()


def test_thinking_off_reaches_the_template(models):
    pair, agent = _agent(models["qwen3"], tools=[], thinking=False)
    try:
        seen = []
        real = agent.engine.stream

        def spy(prompt, *a, **kw):
            seen.append(b"".join(pair.target.token_bytes(t) for t in prompt).decode())
            return real(prompt, *a, **kw)

        agent.engine.stream = spy
        agent.run("hi")
        assert seen[0].endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    finally:
        pair.close()


def _cli(*args):
    return run_localspec("run", *args, timeout=300)  # a scratch LOCALSPEC_HOME: a plain run saves its conversation


@pytest.mark.slow  # the CLI in subprocesses
def test_run_json_has_reasoning_and_show_hide(models):
    target = str(models["qwen3"])
    out = _cli("hi", "--target", target, "--no-draft", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert (data["text"], data["reasoning"]) == ("hello world", "what is it")
    shown = _cli("hi", "--target", target, "--no-draft")
    assert shown.stdout.strip() == "hello world" and "[thinking] what is it" in shown.stderr
    hidden = _cli("hi", "--target", target, "--no-draft", "--reasoning", "hide")
    assert hidden.stdout.strip() == "hello world" and "what is it" not in hidden.stderr


@pytest.mark.slow  # the CLI in subprocesses
def test_run_tools_json_has_reasoning(models, tmp_path):
    out = subprocess.run([sys.executable, "-m", "localspec", "run", "hi", "--tools", "--target", str(models["r1"]),
                          "--no-draft", "--json", "--no-transcript", "--workspace", str(tmp_path),
                          "--approve", "never"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert (data["text"], data["reasoning"]) == ("hello world", "what is it")


openai = pytest.importorskip("openai")


def test_serve_reasoning_content(models):
    from tests.serve_helpers import client, running_server

    with running_server(models["qwen3"], model_id="q") as (url, _):
        c = client(url)
        r = c.chat.completions.create(model="anything", messages=[{"role": "user", "content": "hi"}], max_tokens=30)
        msg = r.choices[0].message
        assert (msg.content, msg.model_extra["reasoning_content"]) == ("hello world", "what is it")
        assert r.model == "q"
        chunks = list(c.chat.completions.create(model="q", messages=[{"role": "user", "content": "hi"}],
                                                max_tokens=30, stream=True))
        deltas = [ch.choices[0].delta for ch in chunks if ch.choices]
        reasoning = "".join((d.model_extra or {}).get("reasoning_content") or "" for d in deltas)
        content = "".join(d.content or "" for d in deltas)
        assert (reasoning, content) == ("what is it", "hello world")
        first_answer = next(i for i, d in enumerate(deltas) if d.content)
        assert all(not (d.model_extra or {}).get("reasoning_content") for d in deltas[first_answer:])


def test_serve_tool_call_after_reasoning(models):
    """The call continues from the model's own `<tool_call>` token (one USER_DEFINED token in Qwen's tokenizer), as in
    the agent loop; without reasoning: tests/serve/test_scripted.py."""
    from tests.serve_helpers import client, running_server

    tools = [{"type": "function", "function": {"name": "list_dir", "description": "List files",
                                               "parameters": {"type": "object", "properties": {}}}}]
    with running_server(models["qwen3-call"], model_id="q") as (url, _):
        r = client(url).chat.completions.create(model="q", messages=[{"role": "user", "content": "ls"}],
                                                tools=tools, max_tokens=40)
        choice = r.choices[0]
        assert choice.finish_reason == "tool_calls"
        assert choice.message.tool_calls[0].function.name == "list_dir"
        assert json.loads(choice.message.tool_calls[0].function.arguments) == {}
        assert choice.message.model_extra["reasoning_content"] == "read file"
