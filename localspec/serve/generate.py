"""Run a Plan on the engine (in the worker thread) and report text, tool calls and the end through `emit`.

Auto tool choice is two phases: free text until the format's trigger (the engine stops on it), then a generation
constrained to a valid call. The trigger itself is never shown as content.

The call continues from the model's own tokens up to the trigger (agent/calls.py's cut, as in the agent loop):
a tokenizer with `<tool_call>` as one token never writes it as text, so a grammar asked to write it from scratch
would refuse the model's choice at once.

Reasoning models (chat/reasoning.py) think first: the reasoning streams as `reasoning_content` (llama-server's
`--reasoning-format deepseek`; with "none", as content, tags and all) up to `</think>`, and the answer (or call)
continues from there.
"""

from __future__ import annotations

import json
import threading
import uuid
from dataclasses import dataclass, field, replace
from typing import Callable

from localspec.agent.calls import call_grammar, cut_at_trigger
from localspec.chat import reasoning as think
from localspec.serve.plan import Plan
from localspec.speculative.detok import whole_chars
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


def _run(engine, prompt, params, constraint, cancel, on_text) -> tuple[str, list[int], Stats]:
    """One engine generation; on_text(piece) -> True stops it early. Returns (text, tokens, stats)."""
    parts, tokens = [], []
    gen = engine.stream(prompt, params, constraint=constraint, cancel=cancel)
    try:
        for ev in gen:
            if ev.token >= 0:
                tokens.append(ev.token)
            if ev.text:
                parts.append(ev.text)
                if on_text(ev.text):
                    break
    finally:
        gen.close()  # runs the engine's bookkeeping now, even when we stopped early
    return "".join(parts), tokens, engine.last_stats


def _triggers(fmt) -> tuple[str, ...]:
    return tuple(t for t in (fmt.triggers or (fmt.trigger,)) if t)


def run_plan(engine, model, plan: Plan, cancel: threading.Event, emit: Emit) -> None:
    total = Stats()
    mode = plan.mode

    reasoning: list[str] = []  # what the model thought, when it is a reasoning model

    def done(reason, content, calls):
        emit(DoneEvent(reason, content, calls, total, len(plan.prompt), total.generated_tokens,
                       reasoning="".join(reasoning) or None))

    def left() -> int:  # completion tokens still allowed
        return max(plan.params.max_tokens - total.generated_tokens, 1)

    if mode in ("free", "auto"):
        auto = mode == "auto"
        triggers = _triggers(plan.fmt) if auto else ()
        # The engine stops on a trigger (as the agent's free phase does), so the call starts from exactly the
        # tokens the model wrote; the watch only covers a trigger that straddles the reasoning's end.
        watch = TriggerWatch(triggers[0] if triggers else "")
        prompt, lead = plan.prompt, []  # lead: answer tokens already written (they continue the prompt)
        answer_started = True
        raw = ""  # reasoning_format "none": the reasoning as written, already sent as content
        if plan.reasoning != think.OFF:
            thought = _think(engine, model, plan, cancel, emit, total)
            if plan.raw_reasoning:
                raw = thought.raw
            else:
                reasoning.append(thought.reasoning)
            if thought.finished:
                return done(_finish(total.finish_reason), raw or None, [])
            prompt, answer_started = plan.prompt + thought.tokens, bool(thought.answer) or plan.raw_reasoning
            if thought.answer:  # no block: the model began answering; go on from there
                prompt, lead = plan.prompt, thought.answer_tokens
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

        tokens = list(lead)
        if not watch.triggered:
            params = replace(plan.params, max_tokens=left(), stop=tuple(plan.params.stop) + triggers)
            _, more, stats = _run(engine, prompt + lead, params, None, cancel, on_text)
            total.merge(stats)
            tokens += more
            reason = stats.finish_reason
        else:
            reason = "stop"
        start = _cut(model, plan.fmt, tokens, triggers) if auto and (reason == "stop" or watch.triggered) else None
        rest = watch.flush()
        if rest:
            emit(TextEvent(rest))
        if start is None:
            return done(_finish(reason), raw + watch.content, [])
        return _call_phase(engine, model, plan, prompt + start.tokens, start.emitted, cancel, emit, total, done,
                           content=(raw + watch.content).strip() or None)

    if mode == "calls":  # the call starts at once: its trigger is the model's own token in the prompt (as above)
        fmt = plan.fmt
        emitted = fmt.trigger if fmt.trigger and fmt.call_prefix.startswith(fmt.trigger) else ""
        head = model.tokenize(emitted, add_special=False, parse_special=True) if emitted else []
        return _call_phase(engine, model, plan, plan.prompt + head, emitted, cancel, emit, total, done,
                           content=None)

    constraint = GrammarConstraint(model, plan.grammar, list(plan.tools) or None)
    buffered = bool(plan.tools)  # the output may be a call: do not stream it as content

    def stream_json(piece):
        if not buffered:
            emit(TextEvent(piece))
        return False  # never stop early: the grammar decides the end

    text, _, stats = _run(engine, plan.prompt, plan.params, constraint, cancel, stream_json)
    total.merge(stats)
    if not (plan.tools and _is_call(text, plan)):
        if buffered and text:
            emit(TextEvent(text))
        return done(_finish(stats.finish_reason), text, [])
    return _calls_or_text(text, stats, plan, emit, done, content=None)


def _cut(model, fmt, tokens: list[int], triggers: tuple[str, ...]):
    """The agent's cut at the trigger (agent/calls.py), on the shortest head of `tokens` that holds one: text
    released late (a lead from the reasoning phase) may have let the generation run past the trigger's token."""
    data, longest = b"", max(len(t.encode()) for t in triggers)
    for n, t in enumerate(tokens, 1):
        piece = model.token_bytes(t)
        data += piece
        window = data[-(len(piece) + longest):]
        if any(tr.encode() in window for tr in triggers):
            return cut_at_trigger(model, fmt, tokens[:n])
    return None


def _call_phase(engine, model, plan: Plan, prompt: list[int], emitted: str, cancel, emit, total: Stats, done,
                content):
    """The call under the tools' grammar, from a prompt that ends with the `emitted` part of the call prefix
    (the model's own tokens: a tokenizer whose `<tool_call>` is one special token never writes it as text, so a
    grammar that had to write it would refuse the model's choice at once)."""
    if len(prompt) + 2 >= engine.target.n_ctx:  # no room left for a call
        return done("length", content, [])
    grammar = plan.call_grammar if not emitted else call_grammar(plan.fmt, list(plan.tools), emitted,
                                                                 parallel=plan.parallel)
    constraint = GrammarConstraint(model, grammar, list(plan.tools) or None)
    params = replace(plan.params, max_tokens=max(plan.params.max_tokens - total.generated_tokens, 1), stop=())
    text, _, stats = _run(engine, prompt, params, constraint, cancel, lambda _: False)
    total.merge(stats)
    return _calls_or_text(emitted + text, stats, plan, emit, done, content=content)


@dataclass
class _Thought:
    reasoning: str
    tokens: list[int]  # the reasoning as the model wrote it, `</think>` included (the answer continues after it)
    answer: str  # answer text already written (the model opened no block)
    finished: bool  # nothing follows: cancelled, or the token limit inside the reasoning
    answer_tokens: list[int] = field(default_factory=list)  # the tokens of `answer`
    raw: str = ""  # the reasoning as written, tags included (what reasoning_format "none" shows)


def _think(engine, model, plan: Plan, cancel, emit, total: Stats) -> _Thought:
    """The reasoning, streamed as ReasoningEvents (or, raw, as TextEvents), up to `</think>`."""
    splitter = think.ReasoningSplitter(opened=plan.reasoning == think.OPEN_STATE)
    raw = plan.raw_reasoning
    seen, sent = [], 0  # raw: the text so far, and how much of it went out (none before a block is open)

    def send_raw(final: str = ""):
        nonlocal sent
        out = "".join(seen)[sent:] + final
        sent += len(out) - len(final)
        if out:
            emit(TextEvent(out))

    def on_text(piece):
        seen.append(piece)
        pieces = splitter.feed(piece)
        if splitter.state == "answer":
            return True  # no block after all: stop, the answer goes on under the trigger watch
        if raw:
            if splitter.state != "start":
                send_raw()
            return False
        for kind, text in pieces:
            if kind == "reasoning":
                emit(ReasoningEvent(text))
        return False

    params = replace(plan.params, stop=tuple(plan.params.stop) + (think.CLOSE,))
    text, tokens, stats = _run(engine, plan.prompt, params, None, cancel, on_text)
    total.merge(stats)
    total.finish_reason = stats.finish_reason
    if splitter.state == "answer":
        # The released text lags behind the tokens (stop strings are held back): the answer is what the tokens
        # say, so that the text shown and the tokens the generation continues from agree.
        kept, whole = whole_chars(model.token_bytes, tokens)
        splitter.feed(whole[len(text):] if whole.startswith(text) else "")
        return _Thought(splitter.reasoning, [], splitter.answer, False, kept)
    # Ended on `</think>` (the stop string); else on the end of the turn, a stop string of the request, the token
    # limit or a cancel: then the reply ends inside its reasoning.
    closed = stats.finish_reason == "stop" and think.CLOSE.encode() in b"".join(model.token_bytes(t) for t in tokens)
    for kind, rest in (splitter.close() if closed else splitter.finish()):
        if kind == "reasoning" and not plan.raw_reasoning:
            emit(ReasoningEvent(rest))
    if raw:  # the engine holds back the stop string `</think>` itself
        send_raw(think.CLOSE if closed else "")
    written = text + think.CLOSE if closed else text
    if not closed or stats.generated_tokens >= plan.params.max_tokens:
        if closed:
            total.finish_reason = "length"
        return _Thought(splitter.reasoning, [], "", True, raw=written)
    # The answer continues from the tokens the model wrote (its text is never re-read as markers).
    return _Thought(splitter.reasoning, tokens, "", False, raw=written)


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
