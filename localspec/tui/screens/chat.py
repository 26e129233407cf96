"""The chat screen (Textual): streamed conversation, tool cards, the prompt and the live statistics panel.

A turn runs in a worker thread (ChatSession.run_turn); its events arrive as TurnUpdate messages, so the UI thread
only renders. Escape (or Ctrl+C) sets the turn's cancel event: the engine stops after the current step and the text
so far stays.

Below WIDE_COLUMNS the statistics panel folds into a one-line summary (Ctrl+T shows it), and the footer lists only
the keys that matter most, so F1, F2, F3 and Ctrl+Q stay visible at 80 columns; F1 lists every key.
"""

from __future__ import annotations

import threading

from pathlib import Path

from textual import events, work
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Footer, Static

from localspec.tui.livestats import StatsView, summary_line
from localspec.tui.messages import TurnUpdate
from localspec.tui.turn import TextChunk, ToolFinished, ToolStarted, TurnDone, TurnFailed, TurnNotice
from localspec.tui.widgets.message import ChatMessage
from localspec.tui.widgets.prompt_input import PromptInput
from localspec.tui.widgets.reasoning import ReasoningBlock
from localspec.tui.widgets.stats import StatsPanel
from localspec.tui.widgets.toolcard import ToolCard
from localspec.tui.shown import line, note


WIDE_COLUMNS = 100  # narrower: the panel folds into one line and the footer keeps only the main keys


def short_path(path: Path) -> str:
    """A folder as the header shows it: under the home folder as ~/..."""
    try:
        return "~/" + str(path.relative_to(Path.home())) if path != Path.home() else "~"
    except ValueError:
        return str(path)


class ChatScreen(Screen):
    # Footer order is this order (then the app's Ctrl+Q, listed here too so it comes before the rest).
    BINDINGS = [
        Binding("f1", "app.help", "Help"),
        Binding("f2", "app.models", "Models"),
        Binding("f3", "app.settings", "Settings"),
        Binding("ctrl+q", "app.quit", "Quit"),
        Binding("escape", "cancel", "Cancel"),
        Binding("ctrl+c", "interrupt", "Cancel", show=False, priority=True),  # before the prompt's copy
        Binding("ctrl+n", "new_chat", "New chat"),
        Binding("ctrl+r", "toggle_thinking", "Thinking", show=False),  # reasoning models: think first, or not
    ]
    # Shown in the footer only when the terminal is wide. Each has a twin that is never shown: check_action turns
    # the shown one off below WIDE_COLUMNS (which hides it), and the key then falls through to its twin.
    _WIDE_ONLY = [("ctrl+t", "toggle_stats", "Stats"), ("ctrl+o", "toggle_origins", "Origins"),
                  ("ctrl+y", "copy_last", "Copy reply"), ("ctrl+s", "save_transcript", "Export"),
                  ("f4", "sessions", "Chats")]
    # Ctrl+Y has priority (the prompt, a TextArea, would take it as "redo"), which would put it first in the
    # footer: it is listed in F1 and the palette instead.
    BINDINGS += [Binding(key, action, text, priority=key == "ctrl+y", show=key != "ctrl+y")
                 for key, action, text in _WIDE_ONLY]
    BINDINGS += [Binding(key, f"narrow_{action}", text, show=False, priority=key == "ctrl+y")
                 for key, action, text in _WIDE_ONLY]
    WIDE_ONLY = frozenset(action for _, action, _ in _WIDE_ONLY)

    busy: reactive[bool] = reactive(False, init=False)
    origins: reactive[bool] = reactive(False)

    def __init__(self) -> None:
        super().__init__(id="chat")
        self._current: ChatMessage | None = None
        self._thinking: ReasoningBlock | None = None  # the reasoning block being written
        self._cards: dict[str, ToolCard] = {}
        self._cancel: threading.Event | None = None
        self._status = "starting"
        self.narrow = False  # below WIDE_COLUMNS
        self.stats_shown: bool | None = None  # Ctrl+T's choice; None: follow the width

    def compose(self) -> ComposeResult:
        with Horizontal(id="header"):
            yield Static("", id="topbar")
            yield Static("", id="where")
        with Horizontal(id="body"):
            yield VerticalScroll(id="log")
            yield StatsPanel(id="stats")
        yield Static(summary_line(None), id="stats-line")
        yield PromptInput(placeholder="Message · Enter sends · Ctrl+J new line · Esc cancels a reply · F1 help",
                          id="prompt")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#log").anchor()  # follow the newest text while a reply streams
        self.query_one("#prompt").focus()
        self.set_status(self._status)
        self.refresh_header()
        self._layout(self.app.size.width)
        if self.app.session.conversation_id is not None:  # --continue / --resume: show what was said
            self.call_later(self.show_conversation)

    # -- layout ---------------------------------------------------------------------------------------------------
    def on_resize(self, event: events.Resize) -> None:
        self._layout(event.size.width)

    def _layout(self, width: int) -> None:
        narrow = width < WIDE_COLUMNS
        if narrow != self.narrow:
            self.narrow = narrow
            self.refresh_bindings()
            self.refresh_header()
        panel = self.query_one(StatsPanel)
        panel.display = (not narrow) if self.stats_shown is None else self.stats_shown
        line = self.query_one("#stats-line", Static)
        line.display = not panel.display
        panel.summary = line
        if line.display:
            line.update(summary_line(panel.view))
        self.query_one(Footer).compact = narrow

    def refresh_header(self) -> None:
        """The right of the top bar: workspace folder, tools on or off, approval mode."""
        session = self.app.session
        tools = getattr(session, "tools_enabled", session.options.tool_choice != "none")
        folder = session.options.workspace.name if self.narrow else short_path(session.options.workspace)
        text = (f"{folder} · tools {'on' if tools else 'off'} · approval {session.toolbox.policy.mode} ")
        for bar in self.query("#where").results(Static):
            bar.update(line(text))  # a folder name can hold escapes or markup

    # -- status and bindings --------------------------------------------------------------------------------------
    @property
    def status(self) -> str:
        """What the top bar says the app is doing: "loading …", "ready", "generating…", "no model"."""
        return self._status

    def set_status(self, status: str) -> None:
        self._status = status
        info = self.app.session.info
        pair = info.label if info else "no model"
        for bar in self.query("#topbar").results(Static):  # none yet before the screen is composed
            bar.update(line(f" localspec · {pair} · {status}"))  # the pair's label comes from file names

    def check_action(self, action: str, parameters) -> bool | None:
        if action == "cancel":
            return True if self.busy else None  # shown greyed out when there is nothing to cancel
        if action in self.WIDE_ONLY:
            return not self.narrow
        return True

    def action_interrupt(self) -> None:
        """Ctrl+C: cancel a running reply; otherwise let the key through (the prompt copies a selection, and the
        app reminds you that Ctrl+Q quits)."""
        if not self.busy:
            raise SkipAction()
        self.action_cancel()

    def watch_busy(self, busy: bool) -> None:
        self.refresh_bindings()
        if self.is_mounted and not self.app.loading:
            self.set_status("generating… (Esc cancels)" if busy else
                            "ready" if self.app.session.loaded else "no model")

    # -- sending --------------------------------------------------------------------------------------------------
    async def on_prompt_input_submitted(self, event: PromptInput.Submitted) -> None:
        text = event.text.strip()
        if not text:
            return
        if self.busy:
            self.notify("a reply is still being written: wait, or press Esc to cancel it", severity="warning")
            return
        if not self.app.session.loaded:
            self.notify("no model is loaded yet", severity="warning")
            return
        # Keys typed right after Enter may already be in the prompt: keep them, drop only what was sent.
        typed = event.prompt.text
        event.prompt.value = typed[len(event.text):] if typed.startswith(event.text) else typed
        await self.send(text)

    async def send(self, text: str) -> None:
        await self.add_message("user", text)
        self._cancel = threading.Event()
        self.app.turn_cancel = self._cancel
        self.busy = True
        self._run_turn(text, self._cancel)

    @work(thread=True, group="turn")
    def _run_turn(self, text: str, cancel: threading.Event) -> None:
        self.app.session.run_turn(text, lambda ev: self.post_message(TurnUpdate(ev)), cancel)

    def action_cancel(self) -> None:
        if self._cancel is not None and self.busy:
            self._cancel.set()
            self.set_status("cancelling…")

    def cancel_turn(self) -> None:
        if self._cancel is not None:
            self._cancel.set()

    # -- rendering a turn -----------------------------------------------------------------------------------------
    async def add_message(self, role: str, text: str = "") -> ChatMessage:
        msg = ChatMessage(role, text, origins=self.origins)
        await self.query_one("#log").mount(msg)
        return msg

    async def _close_current(self) -> None:
        if self._current is not None:
            await self._current.finish()
            self._current = None

    async def on_turn_update(self, message: TurnUpdate) -> None:
        ev = message.event
        stats = self.query_one(StatsPanel)
        if isinstance(ev, TextChunk) and ev.kind == "reasoning":
            if self._thinking is None:
                await self._close_current()
                self._thinking = ReasoningBlock()
                await self.query_one("#log").mount(self._thinking)
            self._thinking.append(ev.text, ev.tokens)
            stats.show(ev.stats, ev.rate)
            return
        if self._thinking is not None:  # the answer, a call or the end: the reasoning folds away
            self._thinking.finish()
            self._thinking = None
        if isinstance(ev, TextChunk):
            role = "call" if ev.kind == "call" else "assistant"
            if self._current is None or self._current.role != role:
                await self._close_current()
                self._current = await self.add_message(role)
            await self._current.append(ev.runs)
            stats.show(ev.stats, ev.rate)
        elif isinstance(ev, ToolStarted):
            await self._close_current()
            card = ToolCard(ev.call_id, ev.name, ev.arguments)
            self._cards[ev.call_id] = card
            await self.query_one("#log").mount(card)
        elif isinstance(ev, ToolFinished):
            card = self._cards.pop(ev.call_id, None)
            if card is not None:
                card.finish(ev.ok, ev.content, ev.error)
        elif isinstance(ev, TurnNotice):
            await self._close_current()
            await self.add_message("note", ev.message)
        elif isinstance(ev, TurnDone):
            await self._close_current()
            stats.show(ev.stats, final=True)
            stats.show_totals(self.app.session.totals)
            if ev.cancelled:
                await self.add_message("note", "cancelled: the reply so far is kept")
            elif ev.finish_reason in ("length", "max_steps"):
                if ev.finish_reason == "length":
                    await self.add_message("note", f"stopped at the token limit ({self.app.session.max_tokens} "
                                                   "tokens): F3 → This conversation → max tokens raises it")
                else:
                    await self.add_message("note", "stopped at the step limit")
            self.busy = False
        elif isinstance(ev, TurnFailed):
            await self._close_current()
            await self.add_message("error", ev.message)
            self.busy = False

    def show_stats(self, view: StatsView, rates: list[float] = ()) -> None:
        """Put fixed figures in the panel (snapshot tests and the screenshot use this: no timings)."""
        panel = self.query_one(StatsPanel)
        for r in rates:
            panel.rates.append(r)
        panel.show(view, final=True)

    # -- actions --------------------------------------------------------------------------------------------------
    def watch_origins(self, on: bool) -> None:
        for msg in self.query(ChatMessage):
            msg.set_origins(on)

    def action_toggle_origins(self) -> None:
        self.origins = not self.origins
        self.notify("token origins " + ("coloured: see the legend in the statistics panel" if self.origins
                                        else "off"), timeout=2)

    def action_toggle_stats(self) -> None:
        self.stats_shown = not self.query_one(StatsPanel).display
        self._layout(self.app.size.width)

    # The never-shown twins of the wide-only bindings (see _WIDE_ONLY).
    def action_narrow_toggle_stats(self) -> None:
        self.action_toggle_stats()

    def action_narrow_toggle_origins(self) -> None:
        self.action_toggle_origins()

    def action_narrow_copy_last(self) -> None:
        self.action_copy_last()

    def action_narrow_save_transcript(self) -> None:
        self.action_save_transcript()

    def action_sessions(self) -> None:
        self.app.action_sessions()

    def action_narrow_sessions(self) -> None:
        self.app.action_sessions()

    def last_reply(self) -> str | None:
        replies = [m for m in self.query(ChatMessage) if m.role == "assistant"]
        return replies[-1].text if replies else None

    def action_copy_last(self) -> None:
        text = self.last_reply()
        if text is None:
            self.notify("no reply to copy yet", severity="warning")
            return
        self.app.copy_to_clipboard(text)
        self.notify("last reply copied to the clipboard", timeout=2)

    def action_save_transcript(self) -> None:
        """Ctrl+S: export the saved conversation (Markdown or JSON) to a path the user picks in a dialog."""
        from localspec.conversations import ConversationError
        from localspec.tui.screens.export import ExportScreen

        session = self.app.session
        if session.conversations is None:
            self.notify("conversations are not being saved in this session", severity="warning")
            return
        if session.conversation_id is None:
            self.notify("nothing to export yet: a conversation is saved from its first message", severity="warning")
            return
        try:
            conv = session.conversations.get(session.conversation_id, turns=True)
        except ConversationError as exc:
            self.notify(note(exc), severity="error", markup=False)
            return

        def exported(path: Path | None) -> None:
            if path is not None:
                self.app.last_transcript = path
                self.notify(note(f"exported to {path}"), timeout=8, markup=False)

        self.app.push_screen(ExportScreen(conv), exported)

    async def show_conversation(self) -> None:
        """Redraw the log from the session's history (a reopened or a deleted conversation) and restart the totals."""
        from localspec.tui.replay import show_history

        self._cards.clear()
        self._current = None
        log = self.query_one("#log")
        await log.remove_children()
        await show_history(log, [m for m in self.app.session.history if m.get("role") != "system"],
                           origins=self.origins)
        self.query_one(StatsPanel).show_totals(self.app.session.totals)
        log.scroll_end(animate=False)

    def action_toggle_thinking(self) -> None:
        session = self.app.session
        session.thinking = not session.thinking
        self.notify("reasoning models think before answering" if session.thinking else
                    "reasoning models answer without thinking (enable_thinking off, /no_think)", timeout=3)

    async def action_new_chat(self) -> None:
        if self.busy:
            self.notify("cancel the current reply first (Esc)", severity="warning")
            return
        self.app.session.reset()
        self._cards.clear()
        await self.query_one("#log").remove_children()
        self.query_one(StatsPanel).show_totals(self.app.session.totals)  # reset() restarted them
        self.notify("new conversation", timeout=2)
