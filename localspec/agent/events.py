"""What the agent loop adds to the turn's events (turns/events.py), for UIs (the app's worker thread, the CLI) and the
conversation recorder: one vocabulary. The loop passes the turn's Delta and PromptRead on as they are, stamped with
the step, and adds what only it knows: messages, tool calls and their approval, notices, each step's statistics and
the end of the run.

Why plain dataclasses and a callback: the app posts them to its own thread; nothing here knows about Textual.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Union

from localspec.speculative import Stats
from localspec.tools import ApprovalRequest, ToolResult
from localspec.turns import Delta, PromptRead


@dataclass
class AgentEvent:
    type = "event"


@dataclass
class MessageAdded(AgentEvent):
    """A message was appended to the conversation (user, assistant with or without tool_calls, tool)."""
    message: dict
    type = "message"


@dataclass
class ToolCallStarted(AgentEvent):
    step: int
    call_id: str
    name: str
    arguments: dict
    type = "tool_call"


@dataclass
class ApprovalNeeded(AgentEvent):
    """Sent just before the Toolbox's approver is asked (the approver itself answers)."""
    step: int
    call_id: str
    request: ApprovalRequest
    type = "approval"


@dataclass
class ApprovalDecided(AgentEvent):
    step: int
    call_id: str
    decision: str  # a tools.Decision value: allow_once, allow_always, deny_once, deny_always
    type = "approval_decision"


@dataclass
class ToolCallFinished(AgentEvent):
    step: int
    call_id: str
    name: str
    arguments: dict
    result: ToolResult
    ran: bool = True  # False when cancelled before it ran
    type = "tool_result"


@dataclass
class Notice(AgentEvent):
    """Something the user should know that is not an error of the run (e.g. a call cut off by max tokens)."""
    step: int
    message: str
    type = "notice"


@dataclass
class StepStats(AgentEvent):
    """Engine statistics of one step: `stats` merges the step's generations (free text, then the call)."""
    step: int
    stats: Stats
    generations: list = field(default_factory=list)  # [(phase, Stats)], phase "reasoning" | "text" | "call" | "probe"
    type = "stats"


@dataclass
class Done(AgentEvent):
    result: Any  # AgentResult
    type = "done"


Event = Union[Delta, PromptRead, AgentEvent]  # what an on_event handler receives
EventHandler = Callable[[Event], None]

