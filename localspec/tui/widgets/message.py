"""A chat message (Textual widget): Markdown normally, or the raw text coloured by token origin.

Roles: assistant (Markdown), user (verbatim: what was typed), call (a tool call as the model writes it), error and
note. Only assistant text is Markdown: fewer widgets per message keeps mounting one cheap for the UI thread. A reply
the Markdown view does not show whole (shown_whole.py) is shown as plain text instead: the user sees every word the
model wrote.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Label, Markdown, Static

from localspec.terminal import display_text
from localspec.tui.origins import coloured
from localspec.tui.widgets.shown_whole import shows_whole

if TYPE_CHECKING:
    from textual.widgets.markdown import MarkdownStream

ROLE_TITLES = {"user": "You", "assistant": "Assistant", "call": "Tool call (as generated)", "error": "Error",
               "note": "localspec"}
MARKDOWN_ROLES = ("assistant",)


class ChatMessage(Vertical, can_focus=True):
    # On a focused message (Up from an empty prompt): the chat screen's actions on the exchange it belongs to.
    BINDINGS = [Binding("c", "copy", "Copy"),
                Binding("e", "screen.edit_message", "Edit"),
                Binding("r", "screen.regenerate_message", "Regenerate"),
                Binding("d", "screen.delete_message", "Delete"),
                Binding("up", "screen.step_message(-1)", "Previous", show=False),
                Binding("down", "screen.step_message(1)", "Next", show=False),
                Binding("escape", "screen.focus_prompt", "Back to the prompt")]

    def __init__(self, role: str, text: str = "", *, origins: bool = False) -> None:
        super().__init__(classes=f"message {role}")
        self.role = role
        self.runs: list[tuple[str, str]] = [("target", text)] if text else []
        self.show_origins = origins
        self.set_class(origins, "-origins")
        self._initial = text
        self._stream: MarkdownStream | None = None
        self.plain = False  # shown as plain text: the Markdown view did not show it whole
        # Refreshes to wait for the Markdown view's blocks to be mounted and laid out before judging what it shows
        # (dropped HTML has no blocks at all, a dropped list item never takes room: those wait them all).
        self._waits = 10

    @property
    def text(self) -> str:
        return "".join(t for _, t in self.runs)

    def compose(self) -> ComposeResult:
        yield Label(ROLE_TITLES.get(self.role, self.role), classes="role")
        if self.role in MARKDOWN_ROLES:
            yield Markdown(display_text(self._initial), classes="body")  # stored/model text: controls shown
            yield Static(coloured(self.runs), classes="origins")
        else:
            yield Static(self._plain(), classes="body")

    def on_mount(self) -> None:
        if self.role in MARKDOWN_ROLES and self._initial:
            self.call_after_refresh(self.check_markdown)

    def on_resize(self) -> None:
        if self.role in MARKDOWN_ROLES and not self.plain:
            self.call_after_refresh(self.check_markdown)  # a narrower view can lose what a wider one showed

    def check_markdown(self) -> None:
        """Show the reply as plain text if the Markdown view, once drawn, does not show all of it."""
        if self.plain or self._stream is not None or not self.text or not self.size.width or self.show_origins:
            return  # shown as text already, still streaming, nothing to show, not laid out yet, or origins shown
        markdown = self.query_one(Markdown)
        if not markdown.children and self._waits:  # its blocks may still be being mounted (or there are none)
            self._waits -= 1
            self.call_after_refresh(self.check_markdown)
            return
        text = display_text(self.text)
        if shows_whole(markdown, text):
            return
        if self._waits:  # blocks mounted a moment ago take their size on a later refresh (a busy CPU: several)
            self._waits -= 1
            self.call_after_refresh(self.check_markdown)
            return
        self.plain = True
        markdown.display = False
        self.mount(Static(Text(text), classes="body plain"), after=markdown)

    def _plain(self) -> Text:
        return coloured(self.runs) if self.show_origins and self.role == "call" else Text(display_text(self.text))

    async def append(self, runs) -> None:
        """Add streamed text; MarkdownStream coalesces fragments when rendering falls behind."""
        self.runs.extend(runs)
        if self.role not in MARKDOWN_ROLES:
            self.query_one(".body", Static).update(self._plain())
            return
        if self._stream is None:
            self._stream = Markdown.get_stream(self.query_one(Markdown))
        await self._stream.write(display_text("".join(t for _, t in runs)))  # per character: pieces escape alike
        if self.show_origins:
            self.query_one(".origins", Static).update(coloured(self.runs))

    async def finish(self) -> None:
        if self._stream is not None:
            await self._stream.stop()
            self._stream = None
            self.call_after_refresh(self.check_markdown)

    def set_origins(self, on: bool) -> None:
        self.show_origins = on
        self.set_class(on, "-origins")
        if self.role in MARKDOWN_ROLES:
            if on:
                self.query_one(".origins", Static).update(coloured(self.runs))
            else:
                self.call_after_refresh(self.check_markdown)
        elif self.role == "call":
            self.query_one(".body", Static).update(self._plain())

    async def action_copy(self) -> None:
        self.app.copy_to_clipboard(self.text)
        self.notify("message copied to the clipboard", timeout=2)
        await self.run_action("screen.focus_prompt")  # copied: what is typed next goes into the prompt
