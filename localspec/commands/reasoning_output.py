"""How headless commands print a reasoning model's thinking (`run --reasoning show|hide`)."""

from __future__ import annotations

import sys

from localspec.terminal import display_text


class ReasoningPrinter:
    """Answer text to stdout; reasoning to stderr (dim, when it is a terminal) or nowhere: a script reading stdout
    gets the answer alone either way."""

    def __init__(self, show: bool):
        self.show = show
        self.in_reasoning = False
        self.dim = show and sys.stderr.isatty()

    def write(self, pieces) -> None:
        for kind, text in pieces:
            if kind == "reasoning":
                if self.show:
                    if not self.in_reasoning:
                        sys.stderr.write(("\x1b[2m" if self.dim else "") + "[thinking] ")
                    sys.stderr.write(display_text(text))  # model text: its control characters are shown, not run
                    sys.stderr.flush()
                self.in_reasoning = True
            else:
                self.end()
                sys.stdout.write(display_text(text))
                sys.stdout.flush()

    def end(self) -> None:
        """The reasoning block is over (the answer starts, or the output ends)."""
        if self.in_reasoning and self.show:
            sys.stderr.write(("\x1b[0m" if self.dim else "") + "\n")
            sys.stderr.flush()
        self.in_reasoning = False
