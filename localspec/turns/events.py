"""What a turn reports while it runs: the first words of the one event vocabulary every layer above speaks. The agent
passes these on as they are, stamped with its step, beside its own events (agent/events.py); the app batches the
deltas for the screen (tui/turn.py: TextChunk); the server writes them as OpenAI chunks (serve/generate.py); the bench
ignores them. docs/architecture.md (Events) maps who adds what. `type` is the name a handler dispatches on."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Union

from localspec.speculative import TARGET

TEXT = "text"  # the visible answer
REASONING = "reasoning"  # what a reasoning model thinks before it answers (`<think>` tags left out)
CALL = "call"  # a tool call being written (its prefix, then the text the grammar allows)
JSON = "json"  # the whole output under a response grammar: a JSON answer, or a call when tools were given


@dataclass(frozen=True)
class Delta:
    """Generated text as it is verified. `origin` is who proposed its token (registry.ORIGINS: "target", "model",
    "schema", ...); `token` is -1 for text released without a token of its own (a held-back tail, a prefix)."""

    text: str
    kind: str = TEXT
    origin: str = TARGET
    token: int = -1
    step: int = 0  # the agent's step that wrote it (0: a turn outside an agent)
    type = "text"


@dataclass(frozen=True)
class ReasoningWritten:
    """The reasoning exactly as the model wrote it, tags included, from where its block opened (`serve`'s
    reasoning_format "none" shows this as content). Sent beside the REASONING deltas, never instead."""

    text: str
    type = "reasoning_written"


@dataclass(frozen=True)
class PromptRead:
    """How far the prefill of a generation's prompt is: `done` of the `total` tokens it has to evaluate (tokens the
    cache kept or a saved prefix restored are not counted), `seconds` since it started. Sent before the first batch
    (done 0) and after each one, so a UI can say "reading prompt: N of M tokens" with a rate while it waits."""

    done: int
    total: int
    seconds: float
    step: int = 0  # the agent's step whose prompt it is (0: a turn outside an agent)
    type = "prompt"

    @property
    def rate(self) -> float | None:
        """Tokens per second so far (None before there is a measure)."""
        return self.done / self.seconds if self.done and self.seconds > 0 else None


def reading_text(done: int, total: int, rate: float | None = None) -> str:
    """How every front end words a prompt being read (the app's status bar and panel, the CLI's stderr line)."""
    speed = f" · {rate:,.0f} tok/s" if rate else ""
    return f"reading prompt: {done:,} of {total:,} tokens{speed}"


TurnEvent = Union[Delta, ReasoningWritten, PromptRead]
Emit = Callable[[TurnEvent], None]
