"""The agent loop over the speculative engine and the local tools (no UI code here; the TUI and CLI consume
its events)."""

from localspec.agent.events import (
    AgentEvent,
    ApprovalDecided,
    ApprovalNeeded,
    Done,
    Event,
    EventHandler,
    MessageAdded,
    Notice,
    StepStats,
    ToolCallFinished,
    ToolCallStarted,
)
from localspec.agent.loop import DEFAULT_SYSTEM, Agent
from localspec.agent.outcome import FINISH_REASONS, AgentResult, ToolCallRecord

__all__ = [
    "Agent", "AgentEvent", "AgentResult", "ApprovalDecided", "ApprovalNeeded", "DEFAULT_SYSTEM", "Done", "Event",
    "EventHandler", "FINISH_REASONS", "MessageAdded", "Notice", "StepStats", "ToolCallFinished", "ToolCallRecord",
    "ToolCallStarted",
]
