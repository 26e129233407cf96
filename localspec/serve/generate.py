"""Run a Plan on the engine (in the worker thread) and report text, tool calls and the end through `emit`.

Auto tool choice is two phases: free text while watching for the format's trigger, then, from the text before
the trigger, a generation constrained to a valid call. The trigger itself is never shown as content.

Reasoning models (chat/reasoning.py) think first: the reasoning streams as `reasoning_content` (llama-server's
`--reasoning-format deepseek`) up to `</think>`, and the answer (or call) continues from there.
"""

from __future__ import annotations

import json
import threading
import uuid
from dataclasses import dataclass, replace
from typing import Callable

from localspec.chat import reasoning as think
from localspec.serve.plan import Plan
from localspec.speculative.grammar import GrammarConstraint
from localspec.speculative.stats import Stats


@dataclass
class TextEvent:
    text: str


@dataclass
class ReasoningEvent:
    text: str  # reasoning as it streams (`<think>` tags left out)


@dataclass
class CallsEvent:
    calls: list[dict]  # OpenAI `tool_calls` entries


@dataclass
class DoneEvent:
    finish_reason: str  # stop | length | tool_calls
    content: str | None
    tool_calls: list[dict]
    stats: Stats
    prompt_tokens: int
    completion_tokens: int = 0
    reasoning: str | None = None  # what a reasoning model thought (message.reasoning_content)


@dataclass
class ErrorEvent:
    error: Exception


Emit = Callable[[object], None]


class TriggerWatch:
    """Passes text through, holding back any tail that could be the start of `trigger`."""

    def __init__(self, trigger: str):
        self.trigger = trigger
        self.buf = ""
        self.content = ""  # text released so far
        self.triggered = False

    def feed(self, text: str) -> str:
        if self.triggered:
            return ""
        if not self.trigger:
            return self._release(text)
        self.buf += text
        i = self.buf.find(self.trigger)
        if i >= 0:
            self.triggered = True
            safe, self.buf = self.buf[:i], ""
            return self._release(safe)
        keep = next((k for k in range(min(len(self.trigger) - 1, len(self.buf)), 0, -1)
                     if self.buf.endswith(self.trigger[:k])), 0)
        safe, self.buf = self.buf[:len(self.buf) - keep], self.buf[len(self.buf) - keep:]
        return self._release(safe)

    def flush(self) -> str:
        rest, self.buf = self.buf, ""
        return self._release(rest)

    def _release(self, text: str) -> str:
        self.content += text
        return text


def _openai_call(name: str, arguments: dict) -> dict:
    return {"id": f"call_{uuid.uuid4().hex[:24]}", "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)}}


def parse_calls(text: str, plan: Plan) -> list[dict]:
    """Calls from grammar-constrained text: prefix {"name": ..., "arguments": {...}} suffix, repeated."""
    prefix, suffix = plan.fmt.call_prefix, plan.fmt.call_suffix
    dec, pos, calls = json.JSONDecoder(), 0, []
    try:
        while True:
            while pos < len(text) and text[pos].isspace():
                pos += 1
            if pos >= len(text):
                return calls
            if prefix and text.startswith(prefix, pos):
                pos += len(prefix)
            while pos < len(text) and text[pos].isspace():
                pos += 1
            obj, pos = dec.raw_decode(text, pos)
            calls.append(_openai_call(obj["name"], obj["arguments"]))
            while pos < len(text) and text[pos].isspace():
                pos += 1
            if suffix and text.startswith(suffix, pos):
                pos += len(suffix)
    except (ValueError, KeyError, TypeError):
        # Not the canonical shape (e.g. cut off by max_tokens): let the format's own parser try.
        return [_openai_call(c.name, c.arguments) for c in plan.fmt.parse(text).calls]


def _finish(reason: str) -> str:
    if reason == "cancelled":  # the client went away; only /metrics ever sees this
        return "cancelled"
    return "length" if reason in ("length", "context") else "stop"


def _run(engine, prompt, params, constraint, cancel, on_text) -> tuple[str, Stats]:
    """One engine generation; on_text(piece) -> True stops it early. Returns (text, stats)."""
    parts = []
    gen = engine.stream(prompt, params, constraint=constraint, cancel=cancel)
    try:
        for ev in gen:
            if ev.text:
                parts.append(ev.text)
                if on_text(ev.text):
                    break
    finally:
        gen.close()  # runs the engine's bookkeeping now, even when we stopped early
    return "".join(parts), engine.last_stats


def run_plan(engine, model, plan: Plan, cancel: threading.Event, emit: Emit) -> None:
    total = Stats()
    mode = plan.mode

    reasoning: list[str] = []  # what the model thought, when it is a reasoning model

    def done(reason, content, calls):
        emit(DoneEvent(reason, content, calls, total, len(plan.prompt), total.generated_tokens,
                       reasoning="".join(reasoning) or None))

    if mode in ("free", "auto"):
        watch = TriggerWatch(plan.fmt.trigger if mode == "auto" else "")
        prompt, plan_params = plan.prompt, plan.params
        answer_started = True
        if plan.reasoning != think.OFF:
            thought = _think(engine, model, plan, cancel, emit, total)
            reasoning.append(thought.reasoning)
            if thought.finished:
                return done(_finish(total.finish_reason), thought.answer or None, [])
            prompt, answer_started = plan.prompt + thought.tokens, bool(thought.answer)
            plan_params = replace(plan.params, max_tokens=max(plan.params.max_tokens - len(thought.tokens), 1))
            if thought.answer:  # no block: the model began answering; go on from there
                prompt = plan.prompt
                safe = watch.feed(thought.answer)
                if safe:
                    emit(TextEvent(safe))

        def on_text(piece):
            nonlocal answer_started
            if not answer_started:  # after `</think>` come blank lines: not part of the answer
                piece = piece.lstrip()
                answer_started = bool(piece)
            safe = watch.feed(piece)
            if safe:
                emit(TextEvent(safe))
            return watch.triggered

        lead = model.tokenize(watch.content, add_special=False, parse_special=False) if watch.content else []
        _, stats = _run(engine, prompt + lead, plan_params, None, cancel, on_text)
        total.merge(stats)
        if not watch.triggered:
            rest = watch.flush()
            if rest:
                emit(TextEvent(rest))
            return done(_finish(stats.finish_reason), watch.content, [])
        # Phase 2: the call, constrained, continuing from the text before the trigger.
        before = model.tokenize(watch.content, add_special=False, parse_special=False) if watch.content else []
        if len(prompt) + len(before) + 2 >= engine.target.n_ctx:  # no room left for a call
            return done("length", watch.content, [])
        params = replace(plan_params, max_tokens=max(plan_params.max_tokens - len(before), 1), stop=())
        call = GrammarConstraint(model, plan.call_grammar, list(plan.tools) or None)
        text, stats = _run(engine, prompt + before, params, call, cancel, lambda _: False)
        total.merge(stats)
        return _calls_or_text(text, stats, plan, emit, done, content=watch.content.strip() or None)

    constraint = GrammarConstraint(model, plan.grammar, list(plan.tools) or None)
    buffered = mode == "calls" or bool(plan.tools)  # the output may be a call: do not stream it as content

    def stream_json(piece):
        if not buffered:
            emit(TextEvent(piece))
        return False  # never stop early: the grammar decides the end

    text, stats = _run(engine, plan.prompt, plan.params, constraint, cancel, stream_json)
    total.merge(stats)
    if mode == "json" and not (plan.tools and _is_call(text, plan)):
        if buffered and text:
            emit(TextEvent(text))
        return done(_finish(stats.finish_reason), text, [])
    return _calls_or_text(text, stats, plan, emit, done, content=None)


@dataclass
class _Thought:
    reasoning: str
    tokens: list[int]  # the reasoning as the model wrote it, `</think>` included (the answer continues after it)
    answer: str  # answer text already written (the model opened no block)
    finished: bool  # nothing follows: cancelled, or the token limit inside the reasoning


def _think(engine, model, plan: Plan, cancel, emit, total: Stats) -> _Thought:
    splitter = think.ReasoningSplitter(opened=plan.reasoning == think.OPEN_STATE)

    def on_text(piece):
        for kind, text in splitter.feed(piece):
            if kind == "reasoning":
                emit(ReasoningEvent(text))
        return splitter.state == "answer"  # no block after all: stop, the answer goes on under the trigger watch

    params = replace(plan.params, stop=tuple(plan.params.stop) + (think.CLOSE,))
    text, stats = _run(engine, plan.prompt, params, None, cancel, on_text)
    total.merge(stats)
    total.finish_reason = stats.finish_reason
    if splitter.state == "answer":
        return _Thought(splitter.reasoning, [], splitter.answer, False)
    closed = stats.finish_reason == "stop"  # on `</think>` (the stop string), or a stop string of the request
    for kind, rest in (splitter.close() if closed else splitter.finish()):
        if kind == "reasoning":
            emit(ReasoningEvent(rest))
    if not closed or stats.generated_tokens >= plan.params.max_tokens:
        if stats.finish_reason == "stop":
            total.finish_reason = "length"
        return _Thought(splitter.reasoning, [], "", True)
    tokens = model.tokenize(text + think.CLOSE, add_special=False, parse_special=True)
    return _Thought(splitter.reasoning, tokens, "", False)


def _is_call(text: str, plan: Plan) -> bool:
    prefix = plan.fmt.call_prefix.strip()
    if prefix:
        return text.lstrip().startswith(prefix)
    try:  # prefix-less formats (Llama 3 JSON): a call is an object with exactly the call's keys
        obj = json.loads(text)
        return isinstance(obj, dict) and set(obj) == {"name", "arguments"} and \
            obj["name"] in {t["function"]["name"] for t in plan.tools}
    except ValueError:
        return False


def _calls_or_text(text, stats, plan, emit, done, content):
    calls = parse_calls(text, plan) if stats.finish_reason in ("grammar", "stop") else []
    if calls:
        emit(CallsEvent(calls))
        return done("tool_calls", content, calls)
    # Cut off before the call was complete: hand back what there is as text.
    if text:
        emit(TextEvent(text))
    return done(_finish(stats.finish_reason), (content or "") + text, [])
