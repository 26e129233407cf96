"""The chat screen (Textual): streamed conversation, tool cards, the prompt and the live statistics panel.

A turn runs in a worker thread (ChatSession.run_turn); its events arrive as TurnUpdate messages, so the UI thread
only renders. Escape sets the turn's cancel event: the engine stops after the current step and the text so far stays.
"""

from __future__ import annotations

import threading

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Footer, Input, Static

from localspec.tui import transcript
from localspec.tui.livestats import StatsView
from localspec.tui.messages import TurnUpdate
from localspec.tui.transcript import Entry, arguments_json
from localspec.tui.turn import Notice, TextChunk, ToolFinished, ToolStarted, TurnDone, TurnFailed
from localspec.tui.widgets.message import ChatMessage
from localspec.tui.widgets.stats import StatsPanel
from localspec.tui.widgets.toolcard import ToolCard


class ChatScreen(Screen):
    BINDINGS = [
        Binding("escape", "cancel", "Cancel"),
        Binding("ctrl+o", "toggle_origins", "Origins"),
        Binding("ctrl+t", "toggle_stats", "Stats"),
        Binding("ctrl+y", "copy_last", "Copy reply"),
        Binding("ctrl+s", "save_transcript", "Save"),
        Binding("ctrl+n", "new_chat", "New chat"),
        Binding("f2", "app.models", "Models"),
        Binding("f3", "app.settings", "Settings"),
    ]

    busy: reactive[bool] = reactive(False, init=False)
    origins: reactive[bool] = reactive(False)

    def __init__(self) -> None:
        super().__init__(id="chat")
        self.entries: list[Entry] = []
        self._current: ChatMessage | None = None
        self._cards: dict[str, ToolCard] = {}
        self._cancel: threading.Event | None = None
        self._status = "starting"

    def compose(self) -> ComposeResult:
        yield Static("", id="topbar")
        with Horizontal(id="body"):
            yield VerticalScroll(id="log")
            yield StatsPanel(id="stats")
        yield Input(placeholder="Ask something (Enter sends, Esc cancels a reply)", id="prompt")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#log").anchor()  # follow the newest text while a reply streams
        self.query_one("#prompt").focus()
        self.set_status(self._status)

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
            bar.update(f" localspec · {pair} · {status}")

    def check_action(self, action: str, parameters) -> bool | None:
        if action == "cancel":
            return True if self.busy else None  # shown greyed out when there is nothing to cancel
        return True

    def watch_busy(self, busy: bool) -> None:
        self.refresh_bindings()
        if self.is_mounted and not self.app.loading:
            self.set_status("generating… (Esc cancels)" if busy else
                            "ready" if self.app.session.loaded else "no model")

    # -- sending --------------------------------------------------------------------------------------------------
    async def on_input_submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if not text:
            return
        if self.busy:
            self.notify("a reply is still being written: wait, or press Esc to cancel it", severity="warning")
            return
        if not self.app.session.loaded:
            self.notify("no model is loaded yet", severity="warning")
            return
        event.input.value = ""
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
        if role in ("user", "error", "note"):
            self.entries.append(Entry(role, text))
        return msg

    async def _close_current(self) -> None:
        if self._current is not None:
            await self._current.finish()
            if self._current.role == "assistant":
                self.entries.append(Entry("assistant", self._current.text))
            self._current = None

    async def on_turn_update(self, message: TurnUpdate) -> None:
        ev = message.event
        stats = self.query_one(StatsPanel)
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
                self.entries.append(Entry("tool", card.result, card.tool_name, arguments_json(card.arguments)))
        elif isinstance(ev, Notice):
            await self._close_current()
            await self.add_message("note", ev.message)
        elif isinstance(ev, TurnDone):
            await self._close_current()
            stats.show(ev.stats, final=True)
            stats.show_totals(self.app.session.totals)
            if ev.cancelled:
                await self.add_message("note", "cancelled: the reply so far is kept")
            elif ev.finish_reason in ("length", "max_steps"):
                why = "the token limit" if ev.finish_reason == "length" else "the step limit"
                await self.add_message("note", f"stopped at {why}")
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
        panel = self.query_one(StatsPanel)
        panel.display = not panel.display

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
        info = self.app.session.info
        entries = list(self.entries)
        if self._current is not None:
            entries.append(Entry("assistant", self._current.text))
        try:
            path = transcript.save(entries, self.app.session.options.workspace, pair=info.label if info else None)
        except OSError as exc:
            self.notify(f"could not save the transcript: {exc.strerror or exc}", severity="error")
            return
        self.app.last_transcript = path
        self.notify(f"transcript saved to {path}", timeout=4)

    async def action_new_chat(self) -> None:
        if self.busy:
            self.notify("cancel the current reply first (Esc)", severity="warning")
            return
        self.app.session.reset()
        self.entries.clear()
        self._cards.clear()
        await self.query_one("#log").remove_children()
        self.notify("new conversation", timeout=2)
