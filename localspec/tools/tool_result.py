"""What every tool call returns, and the one exception tools use to refuse.

Why: the agent loop feeds results straight back to the model, so a call must never raise;
tools raise ToolError internally and the Toolbox turns it into ToolResult(ok=False).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class ToolError(Exception):
    """A refusal or failure the model can read; str(exc) is one line."""


@dataclass
class ToolResult:
    ok: bool
    content: str = ""
    error: str | None = None
    tool: str = ""
    # Structured extras (exit_code, diff, truncated, ...) for UIs; the model sees content/error only.
    data: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def success(cls, content: str, **data: Any) -> "ToolResult":
        return cls(ok=True, content=content, data=data)

    @classmethod
    def failure(cls, error: str, content: str = "", **data: Any) -> "ToolResult":
        return cls(ok=False, content=content, error=one_line(error), data=data)

    def for_model(self) -> str:
        """Text to put in the tool message for the model."""
        if self.ok:
            return self.content
        return f"Error: {self.error}" + (f"\n{self.content}" if self.content else "")


def one_line(text: str) -> str:
    """Collapse whitespace/newlines so errors stay one line."""
    return " ".join(str(text).split())
