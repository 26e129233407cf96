"""Colours for token origins (who proposed each token the target accepted), shared by messages and the legend."""

from __future__ import annotations

from rich.text import Text

from localspec.speculative import ORIGINS
from localspec.terminal import display_text

# One colour and label per origin in the drafter registry (a test checks none is missing).
COLOURS = {
    "target": "#d0d0d0",  # sampled by the target itself
    "model": "#5fd75f",  # drafted by the draft model
    "schema": "#d787ff",  # forced by the tool-call schema
    "history": "#5fafff",  # copied from earlier turns or tool results
    "ngram": "#ffd75f",  # n-gram lookup in the context
    # The target's draft head, whichever kind (a pair has one): one colour, one legend entry.
    "mtp": "#ff87af", "eagle3": "#ff87af", "dflash": "#ff87af",
}
LABELS = {"target": "target", "model": "draft model", "schema": "schema", "history": "history", "ngram": "n-gram",
          "mtp": "MTP head", "eagle3": "EAGLE-3 head", "dflash": "DFlash head"}
HEADS = ("mtp", "eagle3", "dflash")


def colour(origin: str) -> str:
    return COLOURS.get(origin, "#ff8700")  # an unknown drafter still stands out


def coloured(runs) -> Text:
    """Rich Text of (origin, text) runs, each run in its origin's colour."""
    text = Text()
    for origin, part in runs:
        text.append(display_text(part), style=colour(origin))  # model text: its control characters shown
    return text


def legend() -> Text:
    text = Text()
    for origin in ORIGINS:
        if origin in HEADS[1:]:
            continue  # the heads share the first one's entry
        text.append("■ ", style=colour(origin))
        text.append(("head" if origin in HEADS else LABELS[origin]) + "  ")
    return text
