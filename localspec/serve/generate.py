"""Run a Plan as one turn (localspec/turns/, the same turn the agent loop runs) and report it through `emit`: the
turn's own Delta for what streams (its kind REASONING as `reasoning_content`, any other as content), and the server's
own words where an OpenAI response needs them: the calls as `tool_calls` entries, the end with its finish reason and
usage, an error to answer with (docs/architecture.md, Events).

Reasoning streams as `reasoning_content` (llama-server's `--reasoning-format deepseek`), or with "none" as content,
tags and all. The call trigger is never shown as content. With response_format and tools, the output may be a call:
it is held back until the end and sent as content only if it is not one.
"""

from __future__ import annotations

import json
import threading
import uuid
from dataclasses import dataclass
from typing import Callable

from localspec.serve.plan import Plan
from localspec.speculative import Stats
from localspec.turns import JSON, REASONING, TEXT, Delta, ReasoningWritten, TurnEngine, TurnResult


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


def openai_call(name: str, arguments: dict) -> dict:
    return {"id": f"call_{uuid.uuid4().hex[:24]}", "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)}}


def finish_reason(turn: TurnResult) -> str:
    """OpenAI's finish_reason for a turn (engine terms in, "stop" / "length" / "tool_calls" out)."""
    if turn.calls:
        return "tool_calls"
    if turn.finish == "cancelled":  # the client went away; only /metrics ever sees this
        return "cancelled"
    return "length" if turn.finish in ("length", "context") else "stop"


def run_plan(turns: TurnEngine, plan: Plan, cancel: threading.Event, emit: Emit) -> TurnResult:
    held = plan.grammar is not None and bool(plan.tools)  # the output may be a call: not content until we know

    def relay(ev) -> None:
        if isinstance(ev, ReasoningWritten):
            if plan.raw_reasoning:
                emit(Delta(ev.text, TEXT))  # as content, tags and all
        elif isinstance(ev, Delta):
            if ev.kind == REASONING and not plan.raw_reasoning or ev.kind == TEXT or (ev.kind == JSON and not held):
                emit(ev)

    turn = turns.run(plan.prompt, plan.request(), cancel=cancel, emit=relay)
    content = (turn.written_reasoning if plan.raw_reasoning else "") + turn.content
    calls = [openai_call(name, args) for name, args in turn.calls]
    if calls:
        emit(CallsEvent(calls))
    elif held and turn.content:
        emit(Delta(turn.content, TEXT))
    reasoning = None if plan.raw_reasoning else (turn.reasoning or None)
    answer: str | None = content
    if calls:
        answer = content.strip() or None
    elif not content and turn.phases and turn.phases[-1][0] == "reasoning":
        answer = None  # the reply ended inside its reasoning: there is no answer
    emit(DoneEvent(finish_reason(turn), answer, calls, turn.stats, len(plan.prompt), turn.generated_tokens,
                   reasoning=reasoning))
    return turn
