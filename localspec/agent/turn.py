"""One assistant turn: free text until the model starts a tool call, then the call under the schema constraint.

Free generation stops on the format's triggers (stop strings). If a trigger was hit, the call is generated
from exactly there (the prompt is the history plus the emitted trigger) with a GrammarConstraint over the tools'
JSON Schemas, so every call that comes out is valid; further calls in the same turn follow the same way.
Formats whose call body is not JSON (Gemma styles) are generated freely and parsed with the format's parser.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Callable

from localspec.speculative.engine import GenParams
from localspec.speculative.grammar import WRAP_UP, GrammarConstraint
from localspec.speculative.stats import Stats

from .calls import call_grammar, constrainable, cut_at_trigger, list_form, parse_constrained
from .events import TextDelta


@dataclass
class TurnOutput:
    text: str = ""  # the visible part of the message (without the call text)
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
                  *, step: int, cancel, emit: Callable) -> TurnOutput:
    """choice: "auto" | "required" | "none"; `tools` are the definitions a call may use."""
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

    stop = tuple(settings.params.stop) + (tuple(fmt.triggers or (fmt.trigger,)) if json_calls else ())
    params = dataclasses.replace(settings.params, stop=stop)
    tokens, text = _free(engine, prompt, params, cancel, emit, step, out)
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


def _free(engine, prompt, params: GenParams, cancel, emit, step, out: TurnOutput, kind: str = "text"):
    tokens, parts = [], []
    for ev in engine.stream(prompt, params, cancel=cancel):
        if ev.token >= 0:
            tokens.append(ev.token)
        if ev.text:
            parts.append(ev.text)
            emit(TextDelta(step, ev.text, ev.origin, ev.token, kind))
    _record(engine, out, kind)
    return tokens, "".join(parts)


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
        if start.before.strip():
            out.text = (out.text + "\n" + start.before.strip()).strip()
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
