"""The chat prompt (Textual TextArea): Enter sends, Ctrl+J inserts a new line, a paste keeps every line.

Why a TextArea and not an Input: an Input is one line, so a pasted 40-line message kept its first line and was sent
at once. Terminals deliver a paste as one bracketed Paste event, which the TextArea inserts whole; only a typed
Enter sends. Shift+Enter and Alt+Enter insert a new line too where the terminal reports them as such (many send a
plain Enter for Shift+Enter; Ctrl+J is the key that works everywhere, since it is the newline character itself).
"""

from __future__ import annotations

from textual import events
from textual.message import Message
from textual.widgets import TextArea

NEWLINE_KEYS = frozenset({"ctrl+j", "shift+enter", "alt+enter", "ctrl+enter"})


class PromptInput(TextArea):
    DEFAULT_CSS = """
    PromptInput {
        height: auto;
        min-height: 3;
        max-height: 8;
    }
    """

    class Submitted(Message):
        """Enter was pressed: `text` is the whole prompt (the widget is not cleared: the receiver decides)."""

        def __init__(self, prompt: "PromptInput", text: str) -> None:
            super().__init__()
            self.prompt = prompt
            self.text = text

        @property
        def control(self) -> "PromptInput":
            return self.prompt

    class UpFromEmpty(Message):
        """Up in an empty prompt: the chat moves the focus to the last message (to edit, regenerate, delete it)."""

    def __init__(self, *, placeholder: str = "", id: str | None = None) -> None:
        super().__init__(id=id, soft_wrap=True, tab_behavior="focus", show_line_numbers=False,
                         highlight_cursor_line=False, placeholder=placeholder, compact=False)

    @property
    def value(self) -> str:
        """The prompt text (Input's name for it, so code that sets or reads a prompt works on both)."""
        return self.text

    @value.setter
    def value(self, text: str) -> None:
        self.load_text(text)
        self.move_cursor(self.document.end)

    async def _on_key(self, event: events.Key) -> None:
        if event.key == "up" and not self.text:
            event.stop()
            event.prevent_default()
            self.post_message(self.UpFromEmpty())
            return
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            self.post_message(self.Submitted(self, self.text))
            return
        if event.key in NEWLINE_KEYS and not self.read_only:
            event.stop()
            event.prevent_default()
            self._replace_via_keyboard("\n", *self.selection)
            return
        await super()._on_key(event)
