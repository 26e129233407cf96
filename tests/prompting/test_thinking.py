"""Reasoning models: splitting a reply into reasoning and answer (scripted text streams), the thinking switch and
the history, rendered with the real Qwen3 and DeepSeek-R1-Distill templates (llama.cpp's, in localspec/data/templates/ and tests/data/templates/)."""

from __future__ import annotations

import pytest

from localspec.prompting import thinking as think
from localspec.prompting.template import render_chat
from tests.template_gguf import FORMATS

QWEN3 = FORMATS["qwen3"].source()
R1 = FORMATS["deepseek-r1-qwen"].source()


def _pieces(text: str, opened: bool, cut: int) -> tuple[list[tuple[str, str]], think.ReasoningSplitter]:
    """Feed `text` in pieces of `cut` characters (tags land across pieces)."""
    s = think.ReasoningSplitter(opened=opened)
    out = []
    for i in range(0, len(text), cut):
        out += s.feed(text[i:i + cut])
    out += s.finish()
    return out, s


SPLITS = [
    # (generated text, prompt opened the block, reasoning, answer)
    ("<think>\nLet me see.\n</think>\n\nHello!", False, "Let me see.", "Hello!"),  # Qwen3
    ("<think>\n\n</think>\n\nHello!", False, "", "Hello!"),  # Qwen3 with thinking off / /no_think
    ("Hello, no thinking here.", False, "", "Hello, no thinking here."),
    ("  \n<think>a < b, so</think>The answer", False, "a < b, so", "The answer"),  # a "<" that is no tag
    ("Okay, 2+2.\n</think>\n\n4", True, "Okay, 2+2.", "4"),  # DeepSeek-R1: the prompt ends in <think>\n
    ("I ran out of tokens while thin", True, "I ran out of tokens while thin", ""),
    ("<think>never closed", False, "never closed", ""),
    ("answer mentioning </think> later", False, "", "answer mentioning </think> later"),
]


@pytest.mark.parametrize("text,opened,reasoning,answer", SPLITS)
@pytest.mark.parametrize("cut", [1, 3, 1000])
def test_split_whatever_the_pieces(text, opened, reasoning, answer, cut):
    pieces, s = _pieces(text, opened, cut)
    assert (s.reasoning, s.answer) == (reasoning, answer)
    assert "".join(t for k, t in pieces if k == "reasoning") == reasoning
    assert "".join(t for k, t in pieces if k == "text") == answer
    assert think.split(text, opened=opened) == (reasoning, answer)


def test_reasoning_streams_before_it_ends():
    s = think.ReasoningSplitter()
    assert s.feed("<thi") == []  # could still be the tag
    assert s.feed("nk>\nStep one") == [("reasoning", "Step one")]
    assert s.in_reasoning
    assert s.feed(".\n</th") == [("reasoning", ".")]  # the trailing newline waits: it may end the block
    assert s.feed("ink>\n\nDone") == [("text", "Done")]
    assert not s.in_reasoning


def test_close_when_generation_stopped_on_the_tag():
    s = think.ReasoningSplitter()
    s.feed("<think>\nhmm\n")
    assert s.close() == [] and s.state == "after"
    assert s.feed("\n\nAnswer") == [("text", "Answer")]


@pytest.mark.parametrize("template,tail,state", [
    (QWEN3, "<|im_start|>assistant\n", think.MAYBE),
    (QWEN3, "<|im_start|>assistant\n<think>\n\n</think>\n\n", think.OFF),
    (R1, "<｜Assistant｜><think>\n", think.OPEN_STATE),
    (R1, "<｜Assistant｜><think>\n</think>", think.OFF),
    ("{{ messages }}", "<think>\n", think.OFF),  # not a reasoning template
    (None, "", think.OFF),
])
def test_prompt_state(template, tail, state):
    assert think.prompt_state(template, tail) == state


HELLO = [{"role": "user", "content": "hi"}]


def test_qwen3_thinking_switch_is_enable_thinking():
    assert think.template_switch(QWEN3) and think.template_reasons(QWEN3)
    on = render_chat(QWEN3, HELLO, **think.template_vars(QWEN3, True))
    off = render_chat(QWEN3, HELLO, **think.template_vars(QWEN3, False))
    assert on.endswith("<|im_start|>assistant\n")
    assert off.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert think.prompt_state(QWEN3, on) == think.MAYBE and think.prompt_state(QWEN3, off) == think.OFF
    assert think.no_think(HELLO, QWEN3, False) == HELLO  # the template has the real switch


def test_deepseek_r1_opens_the_block_and_needs_the_variable_said():
    # llama.cpp's R1 template closes the block unless enable_thinking is set: it must always be passed.
    assert render_chat(R1, HELLO).endswith("<think>\n</think>")
    on = render_chat(R1, HELLO, **think.template_vars(R1, True))
    assert on.endswith("<｜Assistant｜><think>\n") and think.prompt_state(R1, on) == think.OPEN_STATE
    off = render_chat(R1, HELLO, **think.template_vars(R1, False))
    assert think.prompt_state(R1, off) == think.OFF


def test_soft_switch_for_reasoning_templates_without_the_variable():
    # Qwen3's template as some GGUFs carry it, without the enable_thinking branch (all vendored ones have it).
    qwq = QWEN3.replace("enable_thinking is defined and enable_thinking is false", "false")
    assert think.template_reasons(qwq) and not think.template_switch(qwq)
    msgs = [{"role": "user", "content": "first"}, {"role": "assistant", "content": "x"},
            {"role": "user", "content": "second"}]
    out = think.no_think(msgs, qwq, False)
    assert out[-1]["content"] == "second /no_think" and msgs[-1]["content"] == "second"  # a copy
    assert think.no_think(msgs, qwq, True) == msgs


def _call(name: str) -> dict:
    return {"id": "call1", "type": "function", "function": {"name": name, "arguments": "{}"}}


def test_qwen3_history_keeps_reasoning_only_for_the_current_tool_steps():
    """What the agent stores (content + reasoning_content) is rendered the way Qwen3's template wants: earlier
    turns' reasoning is dropped, the reasoning of tool-call steps after the last user message is kept."""
    msgs = [{"role": "user", "content": "old question"},
            {"role": "assistant", "content": "old answer", "reasoning_content": "OLD-THOUGHT"},
            {"role": "user", "content": "new question"},
            {"role": "assistant", "content": "", "reasoning_content": "STEP-THOUGHT", "tool_calls": [_call("ls")]},
            {"role": "tool", "tool_call_id": "call1", "content": "a.txt"}]
    text = render_chat(QWEN3, msgs, tools=[{"type": "function", "function": {"name": "ls", "parameters": {}}}],
                       **think.template_vars(QWEN3, True))
    assert "OLD-THOUGHT" not in text and "old answer" in text
    assert "<think>\nSTEP-THOUGHT\n</think>\n\n<tool_call>" in text


def test_deepseek_r1_history_never_shows_reasoning():
    msgs = [{"role": "user", "content": "q"},
            {"role": "assistant", "content": "answer", "reasoning_content": "SECRET-THOUGHT"},
            {"role": "user", "content": "q2"}]
    text = render_chat(R1, msgs, **think.template_vars(R1, True))
    assert "SECRET-THOUGHT" not in text and "<｜Assistant｜>answer<｜end▁of▁sentence｜>" in text
