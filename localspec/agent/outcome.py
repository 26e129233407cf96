"""What one agent run returns (and what `localspec run --tools --json` prints)."""

from __future__ import annotations

from dataclasses import dataclass, field

from localspec.speculative import Stats
from localspec.tools import ToolResult

# stop: the model answered; max_steps: the step limit ended the run; cancelled: cancel event or Ctrl-C;
# length: the answer (or a call) hit the token limit; context: the conversation no longer fits the context;
# error: an unexpected exception (re-raised after the Done event reports it).
FINISH_REASONS = ("stop", "max_steps", "cancelled", "length", "context", "error")


@dataclass
class ToolCallRecord:
    id: str
    name: str
    arguments: dict
    result: ToolResult
    step: int
    ran: bool = True

    def to_dict(self) -> dict:
        """One entry of `tool_calls` in `localspec run --tools --json` (a contract: keys and order as printed)."""
        return {"name": self.name, "arguments": self.arguments, "ok": self.result.ok, "content": self.result.content,
                "error": self.result.error}


@dataclass
class AgentResult:
    text: str = ""  # the final assistant text
    reasoning: str = ""  # what a reasoning model thought in this run (its steps' reasoning, in order)
    steps: int = 0  # model turns taken
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    stats: Stats = field(default_factory=Stats)  # all generations of the run merged
    finish_reason: str = ""
    error: str | None = None
    messages: list[dict] = field(default_factory=list)  # messages this run added to the conversation
    first_token_s: float | None = None  # from the start of the run to the first step's first text (None: none)
    reused_prefix_tokens: int = 0  # the first step's prompt tokens not computed (kept or restored: runtime/prefixes)

    def to_dict(self, **run_info) -> dict:
        """What `localspec run --tools --json` prints (a contract: keys and order as printed). `run_info` (the CLI
        passes the target and draft paths and the saved conversation) goes just before "transcript", where the CLI
        has always printed it. "transcript" is always null: the conversation store is the one record of a run (its
        ID is "conversation"; `localspec sessions export ID --format json` writes it out); the key stays for
        scripts that read it."""
        return {"text": self.text, "reasoning": self.reasoning, "steps": self.steps,
                "tool_calls": [c.to_dict() for c in self.tool_calls], "finish_reason": self.finish_reason,
                "error": self.error, "stats": self.stats.to_dict(),
                "time_to_first_token_s": None if self.first_token_s is None else round(self.first_token_s, 4),
                "reused_prefix_tokens": self.reused_prefix_tokens, **run_info, "transcript": None}
