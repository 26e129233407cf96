"""`localspec serve` on GGUFs with real chat templates and tokenizers (Qwen2.5, Qwen3, DeepSeek-R1-Distill) whose
greedy output is scripted (tests/scripted_gguf.py): tool calls that start with the tokenizer's own `<tool_call>`
token, the per-request thinking switch (`chat_template_kwargs`) and `reasoning_format`."""

from __future__ import annotations

import json

import pytest

from localspec.serve.schemas import parse_chat_request
from localspec.speculative.grammar import GrammarConstraint
from tests.scripted_gguf import write_scripted_gguf
from tests.serve_helpers import client, running_server

LIST_DIR = [{"type": "function", "function": {"name": "list_dir", "description": "List files",
                                              "parameters": {"type": "object", "properties": {}}}}]
LS = [{"role": "user", "content": "ls"}]
HI = [{"role": "user", "content": "hi"}]

# Qwen2.5 (no reasoning): a few words, then a call. `<tool_call>` is one USER_DEFINED token, as in the real
# tokenizer: a grammar asked to write the call prefix as text refuses the model's own choice of it.
QWEN25_CALL = ["hello", "<tool_call>", "{", "}}", "</tool_call>", "<|im_end|>"]
QWEN25_CALL_AT_ONCE = QWEN25_CALL[1:]
# Qwen3 with thinking on may answer without a block: a reply, and a call, that begin outside any `<think>`.
QWEN3_PLAIN = ["hello", "▁world", "<|im_end|>"]
QWEN3_DIRECT_CALL = ["hello", "<tool_call>", "{", "}}", "</tool_call>", "<|im_end|>"]
QWEN3_ANSWER = ["<think>", "what", "▁is", "▁it", "</think>", "hello", "▁world", "<|im_end|>"]
R1_ANSWER = ["what", "▁is", "▁it", "</think>", "hello", "▁world", "<｜end▁of▁sentence｜>"]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("scripted-serve")
    return {"qwen2.5-call": write_scripted_gguf(d / "q25-call.gguf", "qwen2.5", QWEN25_CALL),
            "qwen2.5-call-at-once": write_scripted_gguf(d / "q25-call-now.gguf", "qwen2.5", QWEN25_CALL_AT_ONCE),
            "qwen3-plain": write_scripted_gguf(d / "q3-plain.gguf", "qwen3", QWEN3_PLAIN),
            "qwen3-direct-call": write_scripted_gguf(d / "q3-direct.gguf", "qwen3", QWEN3_DIRECT_CALL),
            "qwen3": write_scripted_gguf(d / "q3.gguf", "qwen3", QWEN3_ANSWER),
            "r1": write_scripted_gguf(d / "r1.gguf", "deepseek-r1-qwen", R1_ANSWER)}


def _calls(message) -> list:
    return [(c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls or []]


def _streamed(c, **kw):
    chunks = list(c.chat.completions.create(stream=True, **kw))
    deltas = [ch.choices[0].delta for ch in chunks if ch.choices]
    content = "".join(d.content or "" for d in deltas)
    reasoning = "".join((d.model_extra or {}).get("reasoning_content") or "" for d in deltas)
    calls = [tc.function.name for d in deltas for tc in (d.tool_calls or [])]
    finish = [ch.choices[0].finish_reason for ch in chunks if ch.choices and ch.choices[0].finish_reason]
    return content, reasoning, calls, finish


@pytest.mark.parametrize("name", ["qwen2.5-call", "qwen3-direct-call"])
def test_auto_call_continues_from_the_models_own_trigger_token(models, name):
    """The free phase stops on the `<tool_call>` token and the grammar writes the rest of the call after it (as the
    agent loop does); the words before the call are the content. qwen3: the reply opens no think block."""
    with running_server(models[name], model_id="q", n_ctx=1024) as (url, _):
        c = client(url)
        r = c.chat.completions.create(model="q", messages=LS, tools=LIST_DIR, max_tokens=40)
        choice = r.choices[0]
        assert (choice.finish_reason, choice.message.content) == ("tool_calls", "hello")
        assert _calls(choice.message) == [("list_dir", {})]
        assert "reasoning_content" not in (choice.message.model_extra or {})
        content, reasoning, calls, finish = _streamed(c, model="q", messages=LS, tools=LIST_DIR, max_tokens=40)
        assert (content, reasoning, calls, finish) == ("hello", "", ["list_dir"], ["tool_calls"])
        # Required: the call starts at once, from the trigger token in the prompt.
        r = c.chat.completions.create(model="q", messages=LS, tools=LIST_DIR, tool_choice="required", max_tokens=40)
        assert r.choices[0].finish_reason == "tool_calls" and _calls(r.choices[0].message) == [("list_dir", {})]


def test_json_answer_or_call_accepts_the_models_own_trigger_token(models):
    """response_format with tools and tool_choice auto: one grammar allows a JSON answer or a call. Its call branch
    takes the tokenizer's `<tool_call>` token as well as the text (a grammar's text never matches a special token)."""
    with running_server(models["qwen2.5-call-at-once"], model_id="q", n_ctx=1024) as (url, service):
        r = client(url).chat.completions.create(model="q", messages=LS, tools=LIST_DIR, max_tokens=40,
                                                response_format={"type": "json_object"})
        choice = r.choices[0]
        assert choice.finish_reason == "tool_calls" and _calls(choice.message) == [("list_dir", {})]
        # The model's own first pick is allowed (not only a spelling of the marker that the grammar chose for it).
        req = parse_chat_request({"messages": LS, "tools": LIST_DIR, "response_format": {"type": "json_object"}})
        plan = service.plan(req)
        marker = service.model.tokenize("<tool_call>", add_special=False, parse_special=True)
        assert plan.mode == "json" and len(marker) == 1
        assert GrammarConstraint(service.model, plan.grammar).is_allowed(marker[0])


def _spy_prompts(service) -> list[str]:
    seen: list[str] = []
    real = service.engine.stream

    def spy(prompt, *a, **kw):
        seen.append(b"".join(service.model.token_bytes(t) for t in prompt).decode())
        return real(prompt, *a, **kw)

    service.engine.stream = spy
    return seen


def test_enable_thinking_false_reaches_the_template(models):
    with running_server(models["qwen3-plain"], model_id="q", n_ctx=1024) as (url, service):
        seen = _spy_prompts(service)
        c = client(url)
        first = len(seen)
        off = c.chat.completions.create(model="q", messages=HI, max_tokens=20,
                                        extra_body={"chat_template_kwargs": {"enable_thinking": False}})
        assert seen[first].endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
        assert off.choices[0].message.content == "hello world"
        assert "reasoning_content" not in (off.choices[0].message.model_extra or {})
        # On (the default, and said explicitly): the template leaves the block to the model, which here answers
        # at once; the answer is whole although the first words arrive while a `</think>` is still watched for.
        for extra in ({}, {"chat_template_kwargs": {"enable_thinking": True}}):
            first = len(seen)  # the request's first generation
            on = c.chat.completions.create(model="q", messages=HI, max_tokens=20, extra_body=extra)
            assert seen[first].endswith("<|im_start|>assistant\n") and "</think>" not in seen[first]
            assert on.choices[0].message.content == "hello world"
            assert _streamed(c, model="q", messages=HI, max_tokens=20, extra_body=extra)[:2] == ("hello world", "")


@pytest.mark.parametrize("name, raw", [("qwen3", "<think>what is it</think>hello world"),
                                       ("r1", "what is it</think>hello world")])  # R1's prompt opened the block
def test_reasoning_format_none_keeps_the_raw_text_in_content(models, name, raw):
    with running_server(models[name], model_id="q", n_ctx=1024) as (url, _):
        c = client(url)
        r = c.chat.completions.create(model="q", messages=HI, max_tokens=30, extra_body={"reasoning_format": "none"})
        msg = r.choices[0].message
        assert (msg.content, r.choices[0].finish_reason) == (raw, "stop")
        assert "reasoning_content" not in (msg.model_extra or {})
        assert _streamed(c, model="q", messages=HI, max_tokens=30,
                         extra_body={"reasoning_format": "none"}) == (raw, "", [], ["stop"])
        for fmt in ("deepseek", "auto"):  # the default, by both of llama-server's names
            r = c.chat.completions.create(model="q", messages=HI, max_tokens=30, extra_body={"reasoning_format": fmt})
            msg = r.choices[0].message
            assert (msg.content, msg.model_extra["reasoning_content"]) == ("hello world", "what is it")
        # Cut off inside the reasoning: what was written so far, as written.
        r = c.chat.completions.create(model="q", messages=HI, max_tokens=2, extra_body={"reasoning_format": "none"})
        assert r.choices[0].finish_reason == "length" and raw.startswith(r.choices[0].message.content)
