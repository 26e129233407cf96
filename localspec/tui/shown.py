"""Text from outside the program made ready for a widget: escaped by the one output rule (localspec/terminal.py)
and never read as Textual markup.

Why both: Textual writes a widget's characters to the terminal as they are (ESC, OSC 52, U+202E included; its
own filter drops only a few C0 controls), and a plain str given to Static, Label, a DataTable cell, a Collapsible
title or notify() is parsed as markup, where `[@click=app.quit]` in a session title would become an action.
So stored, model, tool and MCP text reaches widgets only through these.
"""

from __future__ import annotations

from rich.text import Text
from textual.content import Content

from localspec.terminal import display_text, safe_text


def line(text, limit: int | None = None) -> Text:
    """One line (a title, a name, a path, an error): every control character escaped, newlines too."""
    return Text(safe_text(text, limit))


def prose(text) -> Text:
    """Several lines (a message, reasoning, a tool's output): lines and tabs kept, other controls escaped."""
    return Text(display_text(text))


def title(text, limit: int | None = None) -> Content:
    """A Collapsible title: escaped, as plain content (a str would be parsed as markup)."""
    return Content(safe_text(text, limit))


def note(text, limit: int = 1000) -> str:
    """A notification's message; pass markup=False with it."""
    return safe_text(text, limit, newlines=True)
