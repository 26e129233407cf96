"""A reasoning model's thinking as a collapsible block (Textual widget): open while it streams, collapsed once the
answer starts, its title saying how long it took (tokens, seconds, tokens per second).

Plain text, not Markdown: reasoning is long and streams fast, and a Static update per chunk is cheap for the UI
thread where a Markdown re-parse is not.
"""

from __future__ import annotations

import time

from textual.widgets import Collapsible, Static

from localspec.tui.shown import prose


def reasoning_title(tokens: int, seconds: float | None, done: bool) -> str:
    """"Thinking… 42 tokens" while it streams; "Thought for 3.1 s · 42 tokens · 13.5 tok/s" once it is over."""
    count = f"{tokens} token{'s' if tokens != 1 else ''}"
    if not done:
        return f"Thinking… {count}"
    if not seconds or seconds <= 0:
        return f"Thought · {count}"
    return f"Thought for {seconds:.1f} s · {count} · {tokens / seconds:.1f} tok/s"


class ReasoningBlock(Collapsible):
    DEFAULT_CSS = """
    ReasoningBlock { margin: 1 0 0 0; background: $panel; }
    ReasoningBlock .thoughts { color: $text-muted; }
    """

    def __init__(self, text: str = "", *, clock=time.perf_counter) -> None:
        self._body = Static(prose(text), classes="thoughts")  # model text: escaped, never markup
        super().__init__(self._body, title=reasoning_title(0, None, False), collapsed=False, classes="reasoning")
        self.text = text
        self.tokens = 0
        self.done = False
        self._clock = clock
        self._start = clock()
        self.seconds: float | None = None

    def append(self, text: str, tokens: int = 0) -> None:
        self.text += text
        self.tokens += tokens
        self._body.update(prose(self.text))
        self.title = reasoning_title(self.tokens, None, False)

    def finish(self) -> None:
        """The answer (or a tool call) started: collapse, and say what the thinking cost."""
        if self.done:
            return
        self.done = True
        self.seconds = self._clock() - self._start
        self.collapsed = True
        self.title = reasoning_title(self.tokens, self.seconds, True)

    @classmethod
    def finished(cls, text: str) -> "ReasoningBlock":
        """A block from a saved conversation: collapsed, no timing."""
        block = cls(text)
        block.done, block.collapsed = True, True
        block.title = "Thought"
        return block
