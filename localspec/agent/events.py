"""Typed events the agent loop emits, for UIs (TUI worker thread, CLI) and the conversation recorder.

Why plain dataclasses and a callback: the TUI posts them to its own thread; nothing here knows about
textual.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from localspec.speculative import Stats
from localspec.tools import ApprovalRequest, ToolResult


@dataclass
class Event:
    type = "event"


@dataclass
class TextDelta(Event):
    """Generated text as it is verified. kind "text" is the visible answer, "reasoning" what a reasoning model
    thinks before it (`<think>` tags left out), "call" is a tool call being written (under the schema constraint). origin is who proposed the token: "target", "model", "schema", ... so a UI can
    colour accepted drafts."""
    step: int
    text: str
    origin: str
    token: int
    kind: str = "text"
    type = "text"


@dataclass
class PromptProgress(Event):
    """The model is reading its prompt: `done` of the `total` tokens to evaluate, `seconds` so far (a long prompt
    on a CPU takes seconds before the first token; a UI says so). Not recorded."""
    step: int
    done: int
    total: int
    seconds: float
    type = "prompt"

    @property
    def rate(self) -> float | None:
        return self.done / self.seconds if self.done and self.seconds > 0 else None


@dataclass
class MessageAdded(Event):
    """A message was appended to the conversation (user, assistant with or without tool_calls, tool)."""
    message: dict
    type = "message"


@dataclass
class ToolCallStarted(Event):
    step: int
    call_id: str
    name: str
    arguments: dict
    type = "tool_call"


@dataclass
class ApprovalNeeded(Event):
    """Sent just before the Toolbox's approver is asked (the approver itself answers)."""
    step: int
    call_id: str
    request: ApprovalRequest
    type = "approval"


@dataclass
class ApprovalDecided(Event):
    step: int
    call_id: str
    decision: str  # a tools.Decision value: allow_once, allow_always, deny_once, deny_always
    type = "approval_decision"


@dataclass
class ToolCallFinished(Event):
    step: int
    call_id: str
    name: str
    arguments: dict
    result: ToolResult
    ran: bool = True  # False when cancelled before it ran
    type = "tool_result"


@dataclass
class Notice(Event):
    """Something the user should know that is not an error of the run (e.g. a call cut off by max tokens)."""
    step: int
    message: str
    type = "notice"


@dataclass
class StepStats(Event):
    """Engine statistics of one step: `stats` merges the step's generations (free text, then the call)."""
    step: int
    stats: Stats
    generations: list = field(default_factory=list)  # [(phase, Stats)], phase "reasoning" | "text" | "call" | "probe"
    type = "stats"


@dataclass
class Done(Event):
    result: Any  # AgentResult
    type = "done"


EventHandler = Callable[[Event], None]

