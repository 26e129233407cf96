"""One assistant turn: free text until the model starts a tool call, then the call under the schema constraint.

Free generation stops on the format's triggers (stop strings). If a trigger was hit, the call is generated
from exactly there (the prompt is the history plus the emitted trigger) with a GrammarConstraint over the tools'
JSON Schemas, so every call that comes out is valid; further calls in the same turn follow the same way.
Formats whose call body is not JSON (Gemma styles) are generated freely and parsed with the format's parser.

Reasoning models (chat/reasoning.py) think first: the reasoning is generated freely up to `</think>` (no call
triggers: a model that mentions `<tool_call>` while thinking has not made a call), then the answer and its calls
as above, from the prompt plus the reasoning.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Callable

from localspec.speculative.detok import whole_chars
from localspec.speculative.engine import GenParams
from localspec.speculative.grammar import WRAP_UP, GrammarConstraint
from localspec.speculative.stats import Stats

from localspec.chat import reasoning as think

from .calls import call_grammar, constrainable, cut_at_trigger, list_form, parse_constrained
from .events import TextDelta


@dataclass
class TurnOutput:
    text: str = ""  # the visible part of the message (without the call text)
    reasoning: str = ""  # what a reasoning model thought before it answered
    calls: list = field(default_factory=list)  # [(name, arguments)]
    generations: list = field(default_factory=list)  # [(phase, Stats)]
    finish: str = ""  # finish reason of the last generation (engine terms)
    wanted_call: bool = False  # the model began a call while tools were off (tool_choice "none")
    notices: list = field(default_factory=list)


@dataclass
class TurnSettings:
    params: GenParams
    call_max_tokens: int = 1024
    max_calls: int = 8


def generate_turn(engine, model, fmt, prompt: list[int], tools: list[dict], choice: str, settings: TurnSettings,
                  *, step: int, cancel, emit: Callable, reasoning: str = think.OFF) -> TurnOutput:
    """choice: "auto" | "required" | "none"; `tools` are the definitions a call may use. `reasoning` is how the
    reply starts (reasoning.prompt_state): "open", "maybe" or "off"."""
    out = TurnOutput()
    json_calls = constrainable(fmt)
    if choice == "required":
        # Start the turn inside the call: the trigger goes into the prompt as the model's own tokens (special
        # tokens stay special), the grammar writes the rest.
        if json_calls:
            emitted = fmt.trigger if fmt.trigger and fmt.call_prefix.startswith(fmt.trigger) else ""
            head = model.tokenize(emitted, add_special=False, parse_special=True) if emitted else []
            return _call_phase(engine, model, fmt, list(prompt) + head, emitted, tools, settings, out, step, cancel,
                               emit)
        head = model.tokenize(fmt.call_prefix, add_special=False, parse_special=True)
        emit(TextDelta(step, fmt.call_prefix, "target", -1, "call"))
        _, text = _free(engine, list(prompt) + head, settings.params, cancel, emit, step, out, kind="call")
        return _parsed(fmt, fmt.call_prefix + text, out)

    lead: tuple[list, str] = ([], "")
    if reasoning != think.OFF:
        thought = _think(engine, model, prompt, settings.params, reasoning == think.OPEN_STATE, cancel, emit, step,
                         out)
        if thought is None:
            return out
        prompt, lead, room = thought
        settings = dataclasses.replace(settings, params=dataclasses.replace(settings.params, max_tokens=room))
        if not lead[1]:  # after a reasoning block (not a reply that began as an answer)
            emit = _answer_emitter(emit)
    stop = tuple(settings.params.stop) + (tuple(fmt.triggers or (fmt.trigger,)) if json_calls else ())
    params = dataclasses.replace(settings.params, stop=stop)
    tokens, text = _free(engine, prompt, params, cancel, emit, step, out, lead=lead)
    if json_calls and out.finish == "stop":
        start = cut_at_trigger(model, fmt, tokens)
        if start is not None:
            out.text = start.before.strip()
            if choice == "none":
                out.wanted_call = True
                return out
            return _call_phase(engine, model, fmt, list(prompt) + start.tokens, start.emitted, tools, settings, out,
                               step, cancel, emit)
    if choice == "none":
        out.text = text.strip()
        return out
    return _parsed(fmt, text, out)


def _parsed(fmt, text: str, out: TurnOutput) -> TurnOutput:
    """The format's own parser as the fallback reader of a finished message."""
    result = fmt.parse(text)
    out.text = result.content.strip() if result.calls else text.strip()
    out.calls = [(c.name, c.arguments) for c in result.calls]
    out.notices.extend(result.errors)
    return out


def _free(engine, prompt, params: GenParams, cancel, emit, step, out: TurnOutput, kind: str = "text",
          lead: tuple[list, str] = ([], "")):
    """Free text from `prompt`; `lead` is (tokens, text) of the reply already generated (they continue it)."""
    tokens, parts = list(lead[0]), [lead[1]]
    for ev in engine.stream(list(prompt) + tokens, params, cancel=cancel):
        if ev.token >= 0:
            tokens.append(ev.token)
        if ev.text:
            parts.append(ev.text)
            emit(TextDelta(step, ev.text, ev.origin, ev.token, kind))
    _record(engine, out, kind)
    return tokens, "".join(parts)


def _think(engine, model, prompt, params: GenParams, opened: bool, cancel, emit, step, out: TurnOutput):
    """Generate the reasoning, up to and including `</think>`. Returns (prompt for the answer, (tokens, text) of the
    answer already written, tokens left for it), or None when the turn ends here (cancelled, or no room left).

    When the model does not open a block ("maybe" and its first text is something else), it is answering: the
    generation stops there and the answer continues from it with the call triggers watched."""
    splitter = think.ReasoningSplitter(opened=opened)
    tokens: list[int] = []
    answering = False
    gen = engine.stream(prompt, dataclasses.replace(params, stop=tuple(params.stop) + (think.CLOSE,)), cancel=cancel)
    try:
        for ev in gen:
            if ev.token >= 0:
                tokens.append(ev.token)
            for kind, piece in splitter.feed(ev.text):
                emit(TextDelta(step, piece, ev.origin, ev.token, "reasoning" if kind == "reasoning" else "text"))
            if splitter.state == "answer":
                answering = True
                break
    finally:
        gen.close()  # the engine's bookkeeping (statistics) runs now, also when we stopped early
    _record(engine, out, "reasoning" if not answering else "text")
    if answering:
        # The text released so far lags behind the tokens (`</think>` is a stop string, so a tail that could start
        # it is held back): the answer is what the tokens say, and the part not yet shown is shown now.
        kept, whole = whole_chars(model.token_bytes, tokens)
        whole = whole.lstrip()
        if not whole.startswith(splitter.answer):
            return prompt, (tokens, splitter.answer), params.max_tokens - len(tokens)
        if len(whole) > len(splitter.answer):
            emit(TextDelta(step, whole[len(splitter.answer):], "target", -1, "text"))
        return prompt, (kept, whole), params.max_tokens - len(kept)
    closed = think.CLOSE.encode() in b"".join(model.token_bytes(t) for t in tokens)
    if closed:
        splitter.close()
    else:
        for kind, piece in splitter.finish():
            emit(TextDelta(step, piece, "target", -1, "reasoning" if kind == "reasoning" else "text"))
    out.reasoning = splitter.reasoning
    room = params.max_tokens - len(tokens)
    if not closed or room < 1:  # cancelled, a stop string, or the token limit inside the reasoning
        if out.finish == "stop" and not closed:
            out.text = splitter.answer.strip()
        elif room < 1 and out.finish == "stop":
            out.finish = "length"
        return None
    return list(prompt) + tokens, ([], ""), room


def _answer_emitter(emit: Callable) -> Callable:
    """The answer after a reasoning block starts with blank lines (`</think>\n\n`): they are not shown."""
    started = False

    def answer(ev):
        nonlocal started
        if ev.kind == "text" and not started:
            text = ev.text.lstrip()
            if not text:
                return
            started = True
            ev = dataclasses.replace(ev, text=text)
        emit(ev)
    return answer


def _call_phase(engine, model, fmt, prompt, emitted, tools, settings: TurnSettings, out: TurnOutput, step, cancel,
                emit) -> TurnOutput:
    """Generate calls one at a time under the constraint. After each, a short free "probe" lets the model itself
    decide whether another call follows (it writes the trigger again) or the turn ends: a grammar that allowed a
    separator after a call would push models that merely like a newline there into repeating calls."""
    seen: set[str] = set()
    prompt = list(prompt)
    while True:
        tokens, text = _one_call(engine, model, fmt, prompt, emitted, tools, settings, out, step, cancel, emit)
        if out.finish == "cancelled":
            return out
        calls, error = parse_constrained(fmt, text)
        if error:
            out.notices.append(error)
        for name, args in calls:
            key = json.dumps([name, args], sort_keys=True)
            if key in seen:  # small models loop on the same call; running it twice in one turn helps nobody
                out.notices.append(f"a repeat of the same {name} call in one turn was dropped")
                return out
            seen.add(key)
            out.calls.append((name, args))
        if error or len(out.calls) >= settings.max_calls or list_form(fmt):
            return out
        prompt += tokens
        start = _probe(engine, model, fmt, prompt, settings, out, cancel)
        if start is None:
            return out
        before = think.split(start.before)[1] if think.CLOSE in start.before else start.before
        if before.strip():  # (a reasoning model may think again between calls: that is not answer text)
            out.text = (out.text + "\n" + before.strip()).strip()
        prompt += start.tokens
        emitted = start.emitted


def _one_call(engine, model, fmt, prompt, emitted, tools, settings, out, step, cancel, emit):
    constraint = GrammarConstraint(model, call_grammar(fmt, tools, emitted, parallel=False), tools)
    # Near the token limit the call wraps up (closes its strings and objects) instead of being cut off.
    params = GenParams(max_tokens=settings.call_max_tokens, sampling=settings.params.sampling, stop=(),
                       wrap_up=min(WRAP_UP, settings.call_max_tokens // 4))
    if emitted:
        emit(TextDelta(step, emitted, "target", -1, "call"))
    tokens, text = [], emitted
    for ev in engine.stream(prompt, params, constraint=constraint, cancel=cancel):
        if ev.token >= 0:
            tokens.append(ev.token)
        if ev.text:
            text += ev.text
            emit(TextDelta(step, ev.text, ev.origin, ev.token, "call"))
    _record(engine, out, "call")
    if engine.last_stats is not None and engine.last_stats.finish_reason == "grammar":
        engine.remember_call(tokens, text)  # complete calls only: the history drafter learns from them
    return tokens, text


def _probe(engine, model, fmt, prompt, settings: TurnSettings, out: TurnOutput, cancel):
    """A few free tokens after a call: a CallStart if the model opens another call, else None (turn over)."""
    triggers = tuple(fmt.triggers or (fmt.trigger,))
    room = max(len(model.tokenize(t, add_special=False, parse_special=True)) for t in triggers) + 4
    params = dataclasses.replace(settings.params, stop=triggers, max_tokens=room)
    tokens = [ev.token for ev in engine.stream(prompt, params, cancel=cancel) if ev.token >= 0]
    stats = engine.last_stats or Stats()
    out.generations.append(("probe", stats))
    if stats.finish_reason != "stop":
        if stats.finish_reason == "cancelled":
            out.finish = "cancelled"
        return None
    return cut_at_trigger(model, fmt, tokens)


def _record(engine, out: TurnOutput, phase: str) -> None:
    stats = engine.last_stats or Stats()
    out.generations.append((phase, stats))
    out.finish = stats.finish_reason
