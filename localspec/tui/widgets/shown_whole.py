"""Does a Markdown view show the whole of its text? Textual's Markdown drops some of what a model writes: items of a
list that are only a number ("1.\\n2.\\n"), lists nested deeper than the parser follows (markdown-it stops at 20
levels, and "1. 1. 1. 2. 3. ... 10." is ten of them: the paragraph after it went too), HTML ("<T>"). A reply shown
that way looks empty or cut; the chat shows such a reply as plain text instead (widgets/message.py).

The test: every word of the text, but where a link points and a code fence's language (Markdown shows neither by
design), must be in what the view shows, counting only widgets that take room on the screen.
"""

from __future__ import annotations

import re

from rich.text import Text
from textual.content import Content
from textual.widget import Widget
from textual.widgets import Static
from textual.widgets._markdown import MarkdownBullet

WORD = re.compile(r"[^\W_]+")  # letters and digits: Markdown's own punctuation (*, #, |, `) is not a word
LINK_TARGET = re.compile(r"\]\([^)]*\)")
FENCE_INFO = re.compile(r"^(\s*(?:`{3,}|~{3,}))[^`~\n]*$", re.M)


def words_of(text: str) -> set[str]:
    """The words a view of `text` must show."""
    text = FENCE_INFO.sub(r"\1", LINK_TARGET.sub("]", text))
    return set(WORD.findall(text))


def _text(widget: Widget) -> str:
    if isinstance(widget, MarkdownBullet):
        return widget.symbol
    if isinstance(widget, Static):
        content = widget.content
        return content.plain if isinstance(content, (Content, Text)) else str(content)
    return ""


def shown_words(root: Widget) -> set[str]:
    """The words of the widgets under `root` that take room (a widget without width or height shows nothing, nor does
    anything inside it)."""
    words: set[str] = set()
    stack = [root]
    while stack:
        widget = stack.pop()
        if not widget.display or not widget.size.width or not widget.size.height:
            continue
        words.update(WORD.findall(_text(widget)))
        stack.extend(widget.children)
    return words
