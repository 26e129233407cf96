"""What the command line shows around a reply on stderr: the prompt being read, and the end of the reply.

"reading prompt: N of M tokens · R tok/s" while the model reads a long prompt: on a terminal only (stderr), on one
line rewritten in place and cleared when the first token comes; a pipe or a log gets nothing (a line per batch would
be noise there). A prompt short enough to be read before anyone could read the line (SHOW_FROM tokens to evaluate)
shows nothing either.
"""

from __future__ import annotations

import sys

from localspec.turns.events import reading_text

SHOW_FROM = 128  # tokens to evaluate: fewer are read in a blink on any machine


class PromptMeter:
    def __init__(self, stream=None):
        self.stream = stream or sys.stderr
        self.live = bool(getattr(self.stream, "isatty", lambda: False)())
        self.shown = False

    def update(self, done: int, total: int, seconds: float) -> None:
        if not self.live or total < SHOW_FROM:
            return
        rate = done / seconds if done and seconds > 0 else None
        self.stream.write("\r\x1b[2K" + reading_text(done, total, rate))
        self.stream.flush()
        self.shown = True

    def clear(self) -> None:
        """The prompt is read (the first token is coming): the line goes away."""
        if self.shown:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()
            self.shown = False

    def __call__(self, ev) -> None:
        """An agent event handler: PromptRead updates the line, anything else clears it."""
        if getattr(ev, "type", "") == "prompt":
            self.update(ev.done, ev.total, ev.seconds)
        else:
            self.clear()


def end_reply() -> None:
    """End the reply's line on stdout and flush it before anything goes to stderr: with both on one pipe
    (`2>&1 | cat`) the statistics line would otherwise land in the middle of the reply."""
    sys.stdout.write("\n")
    sys.stdout.flush()
