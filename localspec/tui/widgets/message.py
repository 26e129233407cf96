"""A chat message (Textual widget): Markdown normally, or the raw text coloured by token origin.

Roles: assistant (Markdown), user (verbatim: what was typed), call (a tool call as the model writes it), error and
note. Only assistant text is Markdown: fewer widgets per message keeps mounting one cheap for the UI thread. A reply
the Markdown view does not show whole (shown_whole.py) is shown as plain text instead: the user sees every word the
model wrote.
"""

from __future__ import annotations

from time import monotonic
from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Label, Markdown, Static

from localspec.terminal import display_text
from localspec.tui.origins import coloured
from localspec.tui.widgets.shown_whole import shown_words, words_of

if TYPE_CHECKING:
    from textual.widgets.markdown import MarkdownStream

ROLE_TITLES = {"user": "You", "assistant": "Assistant", "call": "Tool call (as generated)", "error": "Error",
               "note": "localspec"}
MARKDOWN_ROLES = ("assistant",)
# A reply the Markdown view seems to cut is watched this long, and until what it shows stayed the same this many looks
# in a row, before it is shown as plain text: blocks mounted a moment ago take their size over several layout passes,
# and on a busy 2-core CPU those can be far apart (a count of refreshes alone ran out there and lost the formatting).
JUDGE_S = 0.4
STEADY_LOOKS = 3
LOOK_EVERY_S = 0.05


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
        self.judging = False  # a look at the Markdown view is pending (one chain at a time, however many ask)
        self._judge_until = 0.0
        self._last_seen: set[str] | None = None
        self._steady = 0

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
            self.judge_markdown()

    def on_resize(self) -> None:
        if self.role in MARKDOWN_ROLES and not self.plain:
            self.judge_markdown()  # a narrower view can lose what a wider one showed

    def judge_markdown(self) -> None:
        """Look again, after the next refresh, whether the Markdown view shows the whole reply (the watch restarts:
        what changed may take its own layout passes)."""
        self._judge_until = monotonic() + JUDGE_S
        self._last_seen, self._steady = None, 0
        if not self.judging:
            self.judging = True
            self.call_after_refresh(self.check_markdown)

    def check_markdown(self) -> None:
        """Show the reply as plain text if the Markdown view, once drawn and steady, does not show all of it."""
        self.judging = False
        if self.plain or self._stream is not None or not self.text or not self.size.width or self.show_origins:
            return  # shown as text already, still streaming, nothing to show, not laid out yet (its resize looks
            # again), or origins shown
        markdown = self.query_one(Markdown)
        text = display_text(self.text)
        seen = shown_words(markdown)
        if words_of(text) <= seen:
            return
        self._steady = self._steady + 1 if seen == self._last_seen else 0
        self._last_seen = seen
        if not markdown.size.width or monotonic() < self._judge_until or self._steady < STEADY_LOOKS:
            self.judging = True  # look again after a pause and a refresh: not a busy loop over idle refreshes
            self.set_timer(LOOK_EVERY_S, lambda: self.call_after_refresh(self.check_markdown))
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
            self.judge_markdown()

    def set_origins(self, on: bool) -> None:
        self.show_origins = on
        self.set_class(on, "-origins")
        if self.role in MARKDOWN_ROLES:
            if on:
                self.query_one(".origins", Static).update(coloured(self.runs))
            else:
                self.judge_markdown()
        elif self.role == "call":
            self.query_one(".body", Static).update(self._plain())

    async def action_copy(self) -> None:
        self.app.copy_to_clipboard(self.text)
        self.notify("message copied to the clipboard", timeout=2)
        await self.run_action("screen.focus_prompt")  # copied: what is typed next goes into the prompt
