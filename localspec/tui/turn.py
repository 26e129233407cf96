"""What a chat turn reports to the screen: the agent's events as they are, except its text, which the batcher here
turns into TextChunks, a few dozen per second.

Why batch: a small model emits hundreds of tokens per second; posting each one to the UI thread would make the
event loop re-render Markdown hundreds of times a second. The generating thread coalesces tokens into chunks
(at most one per `interval`), each carrying a frozen statistics snapshot.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Union

from localspec.agent import Done, Notice, ToolCallFinished, ToolCallStarted
from localspec.tui.livestats import StatsView
from localspec.turns import PromptRead

@dataclass(frozen=True)
class TextChunk:
    runs: tuple[tuple[str, str], ...]  # (origin, text), neighbours of the same origin merged
    stats: StatsView | None = None
    rate: float | None = None  # tokens per second since the previous chunk (the sparkline)
    kind: str = "text"  # "text": the visible answer; "reasoning": a reasoning model's thinking; "call": a tool call
    tokens: int = field(default=0, compare=False)  # tokens in this chunk (the reasoning block counts them)

    @property
    def text(self) -> str:
        return "".join(t for _, t in self.runs)


# What the chat screen receives: the agent's own events (agent/events.py), with the text batched into TextChunks.
ChatEvent = Union[TextChunk, PromptRead, ToolCallStarted, ToolCallFinished, Notice, Done]


@dataclass
class Batcher:
    post: Callable[[ChatEvent], object]  # what it returns is not used
    stats: Callable[[], StatsView | None] = lambda: None
    interval: float = 0.06  # ~16 updates a second: smooth to read, and each one costs the UI a layout pass
    clock: Callable[[], float] = time.perf_counter
    _runs: list[list[str]] = field(default_factory=list)
    _tokens: int = 0
    _last: float | None = None
    _kind: str = "text"

    def add(self, text: str, origin: str, *, kind: str = "text", counts: bool = True) -> None:
        """One emitted token's text (counts=False for text that is not a token, like a trailing flush)."""
        if kind != self._kind:
            self.flush()  # a chunk holds one kind: answer text and call text go to different widgets
            self._kind = kind
        self._tokens += counts
        if text:
            if self._runs and self._runs[-1][0] == origin:
                self._runs[-1][1] += text
            else:
                self._runs.append([origin, text])
        now = self.clock()
        if self._last is None:
            self._last = now
        elif now - self._last >= self.interval:
            self.flush(now)

    def flush(self, now: float | None = None, *, pause: bool = False) -> None:
        """Post what is pending. pause=True: generation stops for a while (a tool runs), so the next rate is
        timed from the next token, not across the pause."""
        now = self.clock() if now is None else now
        if not self._runs and not self._tokens:
            if pause:
                self._last = None
            return
        dt = now - self._last if self._last is not None else 0.0
        # A rate over a sliver of time (the last flush of a generation) is noise, not a sparkline point.
        rate = self._tokens / dt if dt >= self.interval / 2 else None
        self.post(TextChunk(tuple((o, t) for o, t in self._runs), self.stats(), rate, self._kind, self._tokens))
        self._runs, self._tokens, self._last = [], 0, (None if pause else now)
