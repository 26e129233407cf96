"""The agent loop: model -> tool calls -> approval -> run -> results back -> model continues.

One Agent is one conversation (its `messages` persist across run() calls) on one engine. The engine is not
thread-safe: run one Agent.run at a time per engine. A UI runs it on a worker thread, passes `on_event` to get
typed events, and sets `cancel` (a threading.Event) to stop: generation stops at the next token and tools that
have not started do not run.

Steps: each model turn is a step. On the last allowed step (max_steps, when it is not also the first) tools are
off (tool_choice "none") so the run ends with an answer; finish_reason "max_steps" says the model began a call
there anyway (its text up to the call is the answer). With max_steps=1 a turn's calls run, and the run ends.
"""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from typing import Callable

from localspec.agent.events import (
    ApprovalDecided,
    ApprovalNeeded,
    Done,
    Event,
    MessageAdded,
    Notice,
    StepStats,
    ToolCallFinished,
    ToolCallStarted,
)
from localspec.agent.outcome import AgentResult, ToolCallRecord
from localspec.errors import ConfigError, ContextOverflowError
from localspec.speculative import GenParams
from localspec.tools import Decision, ToolResult
from localspec.turns import Delta, PromptRead, ToolChoice, TurnRequest, new_call_id
from localspec.turns.conversation import ChatTurns, TurnProvider
from localspec.turns.tool_choice import NONE, REQUIRED

# What the CLI (and TUI) send as the system prompt unless the user gives one.
DEFAULT_SYSTEM = ("You are a helpful assistant working in the user's project folder (the workspace). Use the tools "
                  "to read, search and change files there and to run commands; paths are relative to the workspace "
                  "root. When a tool result gives you what you need, answer the user directly.")


def _assistant(turn) -> dict:
    """The assistant message of a turn: the answer as content, the reasoning apart (each template decides whether
    to show it again; Qwen3's keeps it only for the tool-call steps of the current request)."""
    message = {"role": "assistant", "content": turn.text}
    if turn.reasoning:
        message["reasoning_content"] = turn.reasoning
    return message


REMOTE_RESULT_CHARS = 8000  # a tool result's size for the model when the server's context window is unknown


class Agent:
    """`engine` is the local SpecEngine (its turns rendered with the model's own chat template), or any
    TurnProvider (turns/conversation.py), such as the remote backend's: the loop, the tools and the approvals are the same."""

    def __init__(self, engine, toolbox, *, model=None, system: str | None = None,
                 params: GenParams = GenParams(max_tokens=512), max_steps: int = 8,
                 tools: list[str] | tuple[str, ...] | None = None, call_max_tokens: int = 1024,
                 max_calls_per_turn: int = 8, result_chars: int | None = None, call_format=None,
                 thinking: bool = True):
        if max_steps < 1:
            raise ConfigError("max_steps must be >= 1")
        if max_calls_per_turn < 1:
            raise ConfigError("max_calls_per_turn must be >= 1")
        if hasattr(engine, "stream"):  # a SpecEngine
            self.provider: TurnProvider = ChatTurns(engine, model, call_format)
        else:
            self.provider = engine
        self.engine = getattr(self.provider, "engine", None)
        self.toolbox = toolbox
        self.model = getattr(self.provider, "model", None)
        self.format = getattr(self.provider, "format", None)
        self.max_steps = max_steps
        # Reasoning models: think before answering (a UI may switch it between runs; prompting/thinking.py).
        self.thinking = thinking
        self.params = params
        self.call_max_tokens = call_max_tokens
        self.max_calls_per_turn = max_calls_per_turn
        # A tool result may not flood the context: about a quarter of the window by default (~4 chars/token).
        n_ctx = self.provider.n_ctx
        self.result_chars = result_chars or (max(2000, n_ctx) if n_ctx else REMOTE_RESULT_CHARS)
        self._tool_names = self._check_tools(tools)
        self.messages: list[dict] = [{"role": "system", "content": system}] if system else []
        self.last_result: AgentResult | None = None

    # -- public -------------------------------------------------------------------------------------------------
    # `params` (generation parameters of the text phases) may be changed by a UI between runs.

    # Tools on or off for this conversation (the app's per-chat switch): off, the model sees no tool definitions.
    tools_on: bool = True

    def tool_specs(self, only: str | None = None) -> list[dict]:
        """The tool definitions the model sees (policy-refused tools are left out; none while tools are off)."""
        if not self.tools_on:
            return []
        names = [only] if only else self.tool_names
        return [s for s in self.toolbox.specs(available_only=True) if s["function"]["name"] in names]

    def run(self, prompt: str, *, tool_choice: ToolChoice | str | dict = "auto", cancel: threading.Event | None = None,
            on_event: Callable[[Event], None] | None = None) -> AgentResult:
        """Add a user message and loop until the model answers without a call, the step limit, or cancel.

        tool_choice applies to the first step: "auto", "required" (the turn starts inside a call), "none", or a
        tool name / {"type": "function", "function": {"name": ...}} (required, that tool only). Later steps: auto.
        KeyboardInterrupt and unexpected exceptions propagate after a Done event with the partial result (which
        last_result holds too), so a recorder saves how the turn ended."""
        choice = self._checked(ToolChoice.parse(tool_choice))
        cancel = cancel or threading.Event()
        result = AgentResult()
        self.last_result = result
        emit = self._emitter(on_event)
        try:
            self._add(emit, result, {"role": "user", "content": prompt})
            self._loop(result, choice, cancel, emit)
        except ContextOverflowError as exc:
            result.finish_reason, result.error = "context", str(exc)
        except KeyboardInterrupt:  # the caller gets the exception; the event handler gets the ending
            result.finish_reason = "cancelled"
            self._close_reply(emit, result)
            emit(Done(result))
            raise
        except Exception as exc:
            result.finish_reason, result.error = "error", f"{type(exc).__name__}: {exc}"
            self._close_reply(emit, result)
            emit(Done(result))
            raise
        self._close_reply(emit, result)
        emit(Done(result))
        return result

    def _close_reply(self, emit, result: AgentResult) -> None:
        """A conversation never ends on a user message nobody answered: a reply that was cancelled or failed before
        it was written is kept as an (empty) assistant message marked so (the model never sees the mark:
        turns/conversation.py; exports show it). The user can regenerate it or carry on."""
        if not self.messages or self.messages[-1].get("role") != "user":
            return
        if result.finish_reason == "cancelled":
            self._add(emit, result, {"role": "assistant", "content": "", "cancelled": True})
        elif result.finish_reason in ("error", "context"):
            self._add(emit, result, {"role": "assistant", "content": "", "failed": result.error or "failed"})

    def reset(self) -> None:
        """Forget the conversation (keeps the system prompt)."""
        self.messages = [m for m in self.messages[:1] if m.get("role") == "system"]

    # -- the loop ------------------------------------------------------------------------------------------------
    def _loop(self, result: AgentResult, choice: ToolChoice, cancel, emit) -> None:
        for step in range(1, self.max_steps + 1):
            if cancel.is_set():
                result.finish_reason = "cancelled"
                return
            last = step == self.max_steps and step > 1
            step_choice = ToolChoice(NONE) if last else (choice if step == 1 else ToolChoice())
            specs = self.tool_specs()  # per step: a UI may switch the policy mode between steps
            if not specs:
                step_choice = ToolChoice(NONE)
            named = step_choice.name
            callable_specs = [s for s in specs if s["function"]["name"] == named] if named else specs
            request = TurnRequest(self.params, tuple(callable_specs), step_choice, max_calls=self.max_calls_per_turn,
                                  call_max_tokens=self.call_max_tokens)
            turn = self.provider.run(self.messages, request, prompt_tools=specs, thinking=self.thinking,
                                     cancel=cancel, emit=self._turn_emitter(step, emit))
            if step == 1:
                result.first_token_s = turn.first_token_s
                result.reused_prefix_tokens = turn.reused_prefix_tokens
            result.steps = step
            for _, s in turn.phases:
                result.stats.merge(s)
            emit(StepStats(step, turn.stats, list(turn.phases)))
            for notice in turn.notices:
                emit(Notice(step, notice))
            if turn.finish == "context" and turn.error:
                raise ContextOverflowError(turn.error)
            result.text = turn.text
            if turn.reasoning:
                result.reasoning = (result.reasoning + "\n\n" + turn.reasoning).strip()
            if turn.finish == "cancelled" or cancel.is_set():
                if turn.text:
                    self._add(emit, result, {**_assistant(turn), "cancelled": True})
                result.finish_reason = "cancelled"
                return
            if not turn.calls:
                self._add(emit, result, _assistant(turn))
                if turn.wanted_call and last:
                    result.finish_reason = "max_steps"
                elif turn.finish in ("length", "context"):
                    result.finish_reason = turn.finish
                else:
                    result.finish_reason = "stop"
                return
            self._run_calls(result, step, turn, cancel, emit)
            if cancel.is_set():
                result.finish_reason = "cancelled"
                return
        result.finish_reason = "max_steps"  # max_steps == 1 and the only turn called tools

    def _run_calls(self, result: AgentResult, step: int, turn, cancel, emit) -> None:
        calls = [(new_call_id(), name, args) for name, args in turn.calls]
        self._add(emit, result, {**_assistant(turn), "tool_calls": [
            {"id": cid, "type": "function",
             "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}}
            for cid, name, args in calls]})
        for cid, name, args in calls:  # in order; every call gets a result message, even when not run
            emit(ToolCallStarted(step, cid, name, args))
            if cancel.is_set():
                res, ran = ToolResult.failure("cancelled by the user; the tool did not run"), False
                res.tool = name
            else:
                res, ran = self._call_tool(step, cid, name, args, emit), True
            emit(ToolCallFinished(step, cid, name, args, res, ran))
            result.tool_calls.append(ToolCallRecord(cid, name, args, res, step, ran))
            self._add(emit, result, {"role": "tool", "tool_call_id": cid, "name": name,
                                     "content": self._for_model(res)})

    def _call_tool(self, step: int, cid: str, name: str, args: dict, emit) -> ToolResult:
        """Toolbox.call with the approver wrapped so UIs see the request and the answer."""
        original = self.toolbox.approver
        if original is None:
            return self.toolbox.call(name, args)

        def asking(request):
            emit(ApprovalNeeded(step, cid, request))
            answer = original(request)
            try:
                emit(ApprovalDecided(step, cid, Decision.coerce(answer).value))
            except ValueError:
                pass  # the Toolbox reports the unrecognised answer as the call's error
            return answer

        self.toolbox.approver = asking
        try:
            return self.toolbox.call(name, args)
        finally:
            self.toolbox.approver = original

    # -- helpers -------------------------------------------------------------------------------------------------
    def _for_model(self, res: ToolResult) -> str:
        text = res.for_model()
        if len(text) <= self.result_chars:
            return text
        return (text[: self.result_chars]
                + f"\n[truncated for the model: showing the first {self.result_chars} of {len(text)} characters]")

    def _add(self, emit, result: AgentResult, message: dict) -> None:
        self.messages.append(message)
        result.messages.append(message)
        emit(MessageAdded(message))

    @staticmethod
    def _turn_emitter(step: int, emit):
        """The turn's text and how far its prompt is read, passed on stamped with the step (ReasoningWritten is
        for the server)."""
        def relay(ev) -> None:
            if isinstance(ev, (Delta, PromptRead)):
                emit(replace(ev, step=step))
        return relay

    @staticmethod
    def _emitter(on_event):
        def emit(event: Event) -> None:
            if on_event is not None:
                on_event(event)
        return emit

    @property
    def tool_names(self) -> list[str]:
        """The tools offered: the ones asked for, else every tool the toolbox has now (MCP servers may come and go)."""
        return list(self._tool_names) if self._tool_names is not None else self.toolbox.names()

    def _check_tools(self, tools) -> list[str] | None:
        known = self.toolbox.names()
        if tools is None:
            return None
        unknown = [t for t in tools if t not in known]
        if unknown:
            raise ConfigError(f"unknown tool(s) {', '.join(unknown)}; available: {', '.join(known)}")
        return list(tools)

    def _checked(self, choice: ToolChoice) -> ToolChoice:
        """The choice, if the tools allow it: a named tool must be one offered now."""
        if choice.name is not None:
            if choice.name in self.tool_names and self.tool_specs(choice.name):
                return choice
            raise ConfigError(f"invalid tool_choice {choice.name!r}: use auto, required, none or an available tool "
                              "name")
        if choice.mode == REQUIRED and not self.tool_specs():
            raise ConfigError("tool_choice 'required' but no tool is available (check the policy mode)")
        return choice
