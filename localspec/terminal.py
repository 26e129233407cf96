"""The one rule for text that leaves the program for a terminal: control and invisible characters are shown, never
sent.

Why: stored conversations, model output, tool results, MCP servers' descriptions and remote servers' answers are
text someone else wrote. Sent raw, ESC sequences act on the terminal: OSC 52 writes the clipboard, OSC 0 the
window title, OSC 8 makes hidden links, ESC [2J clears the screen, ESC [2K and CR erase a line and draw another;
C1 controls (U+009B is a one-character CSI) do the same; BiDi overrides (U+202E) reorder what is shown. So every
printer and every widget shows such text through safe_text() / display_text() (escaped visibly: \\x1b, \\u202e)
and JSON through safe_json() (the same characters as JSON escapes, so the value a program reads is unchanged).
The tests push every class of sequence through every output path and find none (tests/test_terminal_output.py).
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

_KEEP_LINES = frozenset("\n\t")
# Zero-width joiners are part of written language and of emoji (Persian, Indic scripts; 👩‍💻): kept in prose.
_JOINERS = frozenset("\u200c\u200d")
# Unicode categories that draw nothing or change how other text is drawn: controls, format characters
# (BiDi overrides, zero-width), surrogates, private use, unassigned, line/paragraph separators.
_HIDDEN_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}


def hidden(ch: str) -> bool:
    """Whether one character is a control or invisible character (newline and tab included)."""
    if ch < "\x7f":
        return ch < " "
    return unicodedata.category(ch) in _HIDDEN_CATEGORIES


def _escape(ch: str) -> str:
    code = ord(ch)
    if code < 0x100:
        return {"\r": "\\r", "\t": "\\t", "\n": "\\n", "\x08": "\\b", "\x1b": "\\x1b"}.get(ch, f"\\x{code:02x}")
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def hidden_characters(text: str, scan: int = 1_000_000) -> int:
    """How many control or invisible characters (other than newline and tab) the text holds (first `scan` chars)."""
    part = text[:scan]
    if part.isprintable():
        return 0
    return sum(1 for ch in part if ch not in _KEEP_LINES and hidden(ch))


def safe_text(text: Any, limit: int | None = None, *, newlines: bool = False, joiners: bool = False) -> str:
    """text with control/invisible characters escaped and at most `limit` characters of it shown.

    newlines=True keeps line breaks and tabs (diffs, messages); otherwise they are escaped too (one-line fields).
    joiners=True keeps the zero-width (non-)joiners of prose; approvals leave it off (what runs must be visible).
    """
    text = str(text)
    cut = 0
    if limit is not None and len(text) > limit:
        cut = len(text) - limit
        text = text[:limit]
    if not text.isprintable():
        keep = (_KEEP_LINES if newlines else frozenset()) | (_JOINERS if joiners else frozenset())
        text = "".join(_escape(ch) if ch not in keep and hidden(ch) else ch for ch in text)
    if cut:
        text += f"… [{cut:,} more characters not shown]"
    return text


def display_text(text: Any) -> str:
    """Prose for a terminal (a message, a reply, reasoning, a tool's output): lines, tabs and joiners kept,
    every other control or invisible character escaped. Per character, so streamed pieces escape alike."""
    return safe_text(text, newlines=True, joiners=True)


_ASCII_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f]")


def _json_escape(ch: str) -> str:
    code = ord(ch)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def safe_json_text(text: str) -> str:
    """A JSON text with its raw control and invisible characters (only possible inside its strings: JSON's own
    syntax is printable ASCII and newlines) written as \\u escapes: the same JSON value, nothing raw on a terminal.
    Lone surrogates become escapes too, so printing cannot fail on them."""
    if text.isascii():
        return _ASCII_CONTROL.sub(lambda m: _json_escape(m.group()), text)
    return "".join(_json_escape(ch) if ch != "\n" and hidden(ch) else ch for ch in text)


def safe_json(value: Any, **dumps: Any) -> str:
    """json.dumps(value, ensure_ascii=False, ...) safe to print: readable text, escaped controls."""
    dumps.setdefault("ensure_ascii", False)
    return safe_json_text(json.dumps(value, **dumps))
