"""The chat screen (Textual): the top bar, the conversation log, the prompt and the live statistics panel.

A turn runs in a worker thread (ChatSession.run_turn); its events arrive as TurnUpdate messages, so the UI thread
only renders: the log draws them (widgets/chat_log.py), the panel counts them, the top bar says what is going on.
Escape (or Ctrl+C) sets the turn's cancel event: the engine stops after the current step and the text so far stays.
The chat's commands (/tool, /tools) are in chat_commands.py, editing the conversation in chat_editing.py.

Below WIDE_COLUMNS the statistics panel folds into a one-line summary (Ctrl+T shows it), and the footer lists only
the keys that matter most, so F1, F2, F3 and Ctrl+Q stay visible at 80 columns; F1 lists every key.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Sequence

from textual import events, work
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Footer, Static

from localspec.agent import Done
from localspec.conversations import ConversationError
from localspec.conversations.store import title_from
from localspec.tui.host import host
from localspec.tui.livestats import StatsView, summary_line
from localspec.tui.messages import TurnUpdate
from localspec.tui.screens.chat_commands import ChatCommands, command_of
from localspec.tui.screens.chat_editing import ACTIONS as EDIT_ACTIONS
from localspec.tui.screens.chat_editing import Editing
from localspec.tui.screens.export import ExportScreen
from localspec.tui.session import ChatSession
from localspec.tui.shown import note
from localspec.tui.turn import TextChunk
from localspec.tui.widgets.chat_log import ChatLog
from localspec.tui.widgets.message import ChatMessage
from localspec.tui.widgets.prompt_input import PromptInput
from localspec.tui.widgets.stats_panel import StatsPanel
from localspec.tui.widgets.top_bar import TopBar
from localspec.turns import PromptRead
from localspec.turns.events import reading_text

WIDE_COLUMNS = 100  # narrower: the panel folds into one line and the footer keeps only the main keys
PROMPT_PLACEHOLDER = "Message · Enter sends · Ctrl+J new line · ↑ edits · /tool NAME forces a tool · F1 help"
READING_FROM = 128  # tokens to read before the wait is worth a status line (a short prompt is read in a blink)


class ChatScreen(Screen):
    # Footer order is this order. At 80 columns the footer holds exactly the keys shown here (the palette's own
    # "^p palette" gives way below WIDE_COLUMNS; F1 and the palette list every key): "esc Stop" takes the place of
    # "^n New" and "^r Think" while a reply is written, when those two do nothing.
    BINDINGS = [
        Binding("f1", "app.help", "Help"),
        Binding("f2", "app.models", "Models"),
        Binding("f3", "app.settings", "Settings"),
        Binding("f4", "sessions", "Chats"),
        Binding("f5", "app.tools", "Tools"),
        Binding("escape", "cancel", "Stop"),
        Binding("ctrl+n", "new_chat", "New"),
        Binding("ctrl+s", "save_transcript", "Save"),
        Binding("ctrl+r", "toggle_thinking", "Think"),  # reasoning models: think first, or not
        Binding("ctrl+q", "app.quit", "Quit"),
        Binding("ctrl+c", "interrupt", "Cancel", show=False, priority=True),  # before the prompt's copy
        Binding("ctrl+g", "regenerate", "Regenerate", show=False),
        # Priority: the prompt (a TextArea) takes F6 as "select line". Not in the footer (priority would put it
        # first there): the header says "tools on (F6)".
        Binding("f6", "toggle_tools", "Tools on/off", show=False, priority=True),
    ]
    # Shown in the footer only when the terminal is wide. Each has a twin that is never shown: check_action turns
    # the shown one off below WIDE_COLUMNS (which hides it), and the key then falls through to its twin.
    _WIDE_ONLY = [("ctrl+t", "toggle_stats", "Stats"), ("ctrl+o", "toggle_origins", "Origins"),
                  ("ctrl+y", "copy_last", "Copy reply")]
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
        self._cancel: threading.Event | None = None
        self.narrow = False  # below WIDE_COLUMNS
        self.stats_shown: bool | None = None  # Ctrl+T's choice; None: follow the width
        self.commands = ChatCommands(self)
        self.editing = Editing(self)
        # Made here, not in compose: the app says what it is loading before the screen is mounted.
        self.top_bar = TopBar(id="header")
        self.chat_log = ChatLog(id="log")

    def compose(self) -> ComposeResult:
        yield self.top_bar
        with Horizontal(id="body"):
            yield self.chat_log
            yield StatsPanel(id="stats")
        yield Static(summary_line(None), id="stats-line")
        yield PromptInput(placeholder=PROMPT_PLACEHOLDER, id="prompt")
        yield Footer()

    @property
    def prompt(self) -> PromptInput:
        return self.query_one(PromptInput)

    @property
    def session(self) -> ChatSession:
        return host(self).session  # the app's (tui/host.py)

    def on_mount(self) -> None:
        self.query_one("#prompt").focus()
        self.set_status(self.status)
        self.refresh_header()
        self._layout(self.app.size.width)
        if self.session.conversation_id is not None:  # --continue / --resume: show what was said
            self.call_later(self.show_conversation)

    # -- layout ---------------------------------------------------------------------------------------------------
    def on_resize(self, event: events.Resize) -> None:
        self._layout(event.size.width)

    def _layout(self, width: int) -> None:
        narrow = width < WIDE_COLUMNS
        if narrow != self.narrow:
            self.narrow = narrow
            self.refresh_bindings()
            self.top_bar.show(narrow=narrow)
            self.refresh_header()
        panel = self.query_one(StatsPanel)
        panel.display = (not narrow) if self.stats_shown is None else self.stats_shown
        line = self.query_one("#stats-line", Static)
        line.display = not panel.display
        panel.summary = line
        if line.display:
            line.update(summary_line(panel.view, width - 2))  # the line's padding: one column each side
        footer = self.query_one(Footer)
        footer.compact = narrow
        footer.show_command_palette = not narrow  # at 80 columns the keys need the room

    # -- the top bar ------------------------------------------------------------------------------------------------
    @property
    def status(self) -> str:
        """What the top bar says the app is doing: "loading …", "ready", "generating…", "no model"."""
        return self.top_bar.status

    def set_status(self, status: str) -> None:
        info = self.session.info
        self.top_bar.show(status=status, pair=info.label if info else "no model")

    def refresh_header(self) -> None:
        """The right of the top bar: workspace folder, tools on or off, approval mode."""
        session = self.session
        tools = "on" if session.tools_on else "off"
        if session.tools_on and session.next_tool:
            tools = f"next: {session.next_tool}"
        self.top_bar.show_where(session.options.workspace, tools, session.toolbox.policy.mode)

    def refresh_title(self) -> None:
        """The conversation's title in the top bar: its saved title (renamed or not), else its first message."""
        session = self.session
        title = ""
        if session.conversations is not None and session.conversation_id is not None:
            try:
                title = session.conversations.get(session.conversation_id, messages=False).title
            except Exception:  # a store that went away: the title is only a label
                title = ""
        if not title:
            first = next((m for m in session.history if m.get("role") == "user"), None)
            title = title_from(str(first.get("content") or "")) if first else ""
        self.top_bar.show(title=title)

    # -- bindings ---------------------------------------------------------------------------------------------------
    def check_action(self, action: str, parameters) -> bool | None:
        if action == "cancel":
            return self.busy or self.editing.active  # hidden when there is nothing to stop
        if action in ("new_chat", "toggle_thinking"):  # hidden while a reply is written or a message edited: esc
            return not self.busy and not self.editing.active  # (Stop) takes their place in the footer
        if action in EDIT_ACTIONS:
            return self.editing.allows(action)
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
        if self.is_mounted and not host(self).loading:
            self.set_status("generating… (Esc cancels)" if busy else
                            "ready" if self.session.loaded else "no model")

    # -- sending --------------------------------------------------------------------------------------------------
    async def on_prompt_input_submitted(self, event: PromptInput.Submitted) -> None:
        text = event.text.strip()
        if not text:
            return
        command = command_of(text)
        if command is not None:
            event.prompt.value = ""
            await self.commands.run(*command)
            return
        if self.busy:
            self.notify("a reply is still being written: wait, or press Esc to cancel it", severity="warning")
            return
        if not self.session.loaded:
            self.notify("no model is loaded yet", severity="warning")
            return
        # Keys typed right after Enter may already be in the prompt: keep them, drop only what was sent.
        typed = event.prompt.text
        event.prompt.value = typed[len(event.text):] if typed.startswith(event.text) else typed
        await self.editing.take_back_edited()  # an edited message replaces the original and what followed
        await self.send(text)

    async def send(self, text: str, tool: str | None = None) -> None:
        # Busy before the message is mounted: an Enter pressed while it mounts (a loaded CPU) must not start a
        # second turn beside this one (and an Esc meanwhile cancels this turn, not the last one).
        self._cancel = threading.Event()
        host(self).turn_cancel = self._cancel
        self.busy = True
        await self.add_message("user", text)
        self._run_turn(text, self._cancel, tool)
        self.refresh_header()  # a tool set for this message is used now
        bar = self.top_bar
        if not bar.title:  # a new chat's title is its first message (the store has not seen it yet)
            bar.show(title=title_from(text))

    @work(thread=True, group="turn")
    def _run_turn(self, text: str, cancel: threading.Event, tool: str | None = None) -> None:
        self.session.run_turn(text, lambda ev: self.post_message(TurnUpdate(ev)), cancel, tool=tool)

    def action_cancel(self) -> None:
        if self._cancel is not None and self.busy:
            self._cancel.set()
            self.set_status("cancelling…")
        elif self.editing.active:
            self.editing.cancel()

    def cancel_turn(self) -> None:
        if self._cancel is not None:
            self._cancel.set()

    def reset_prompt(self) -> None:
        self.query_one(PromptInput).placeholder = PROMPT_PLACEHOLDER
        self.refresh_bindings()

    # -- a turn's events ------------------------------------------------------------------------------------------
    async def on_turn_update(self, message: TurnUpdate) -> None:
        ev = message.event
        panel = self.query_one(StatsPanel)
        if isinstance(ev, PromptRead):
            if ev.total >= READING_FROM:  # narrow: the figures are on the summary line below, not in the top bar
                self.set_status("reading prompt… (Esc cancels)" if self.narrow else
                                reading_text(ev.done, ev.total, ev.rate) + " (Esc cancels)")
                panel.reading(ev.done, ev.total, ev.rate)
            return
        if self.busy and self.status.startswith("reading prompt"):
            self.set_status("generating… (Esc cancels)")
        await self.chat_log.show(ev)
        if isinstance(ev, TextChunk):
            panel.show(ev.stats, ev.rate)
        elif isinstance(ev, Done):
            await self._ended(ev)

    async def _ended(self, done: Done) -> None:
        result, session = done.result, self.session
        await self.chat_log.show_end(result, session.max_tokens)
        panel = self.query_one(StatsPanel)
        if result.steps:  # a turn that could not run has no figures of its own
            panel.show(StatsView.of(result.stats, first_token_s=result.first_token_s), final=True)
        panel.show_totals(session.totals)
        self.busy = False
        self.refresh_title()
        self.refresh_header()

    def show_stats(self, view: StatsView, rates: Sequence[float] = ()) -> None:
        """Put fixed figures in the panel (snapshot tests and the screenshot use this: no timings)."""
        panel = self.query_one(StatsPanel)
        for r in rates:
            panel.rates.append(r)
        panel.show(view, final=True)

    async def add_message(self, role: str, text: str = "") -> ChatMessage:
        return await self.chat_log.add_message(role, text)

    async def show_conversation(self, *, restart: bool = True) -> None:
        """Redraw the log from the session's history (a reopened, deleted or edited conversation); `restart`: it
        is another conversation, so the panel's turn figures go and its totals are that conversation's."""
        await self.chat_log.redraw(self.session.history)
        panels = self.query(StatsPanel)
        if not panels:
            return  # asked for just before the app quit: the screen's widgets were taken down meanwhile
        panel = panels.first()
        if restart:
            panel.reset()
            self.editing.exchange = None
            self.reset_prompt()
        panel.show_totals(self.session.totals)
        self.refresh_title()
        self.refresh_header()
        self.action_focus_prompt()  # the message that had the keyboard may be gone: typing goes on in the prompt

    def on_screen_resume(self) -> None:
        """Back from a dialog or another screen: the keyboard is the prompt's, or a message's the user was on."""
        if not isinstance(self.focused, (PromptInput, ChatMessage)):
            self.action_focus_prompt()

    # -- the messages: Up from an empty prompt, then e, r, d (chat_editing.py) ----------------------------------------
    def on_prompt_input_up_from_empty(self, event: PromptInput.UpFromEmpty | None) -> None:  # None: the palette
        self.chat_log.focus_last()

    def action_step_message(self, delta: int) -> None:
        if not self.chat_log.step(self.focused, delta):
            self.action_focus_prompt()

    def action_focus_prompt(self) -> None:
        self.query_one(PromptInput).focus()

    def action_edit_message(self) -> None:
        self.editing.edit()

    async def action_regenerate_message(self) -> None:
        await self.editing.regenerate_focused()

    async def action_regenerate(self) -> None:
        await self.editing.regenerate_last()

    def action_delete_message(self) -> None:
        self.editing.delete_focused()

    # -- tools (F6, /tool, /tools: chat_commands.py) ----------------------------------------------------------------
    async def use_tool(self, name: str, message: str = "") -> None:
        await self.commands.use_tool(name, message)

    def action_toggle_tools(self) -> None:
        self.commands.set_tools(not self.session.tools_on)

    # -- actions --------------------------------------------------------------------------------------------------
    def watch_origins(self, on: bool) -> None:
        if self.is_mounted:
            self.chat_log.set_origins(on)

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

    def action_sessions(self) -> None:
        host(self).action_sessions()

    def action_copy_last(self) -> None:
        text = self.chat_log.last_reply()
        if text is None:
            self.notify("no reply to copy yet", severity="warning")
            return
        self.app.copy_to_clipboard(text)
        self.notify("last reply copied to the clipboard", timeout=2)

    def action_save_transcript(self) -> None:
        """Ctrl+S: export the saved conversation (Markdown or JSON) to a path the user picks in a dialog."""
        session = self.session
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
                host(self).last_transcript = path
                self.notify(note(f"exported to {path}"), timeout=8, markup=False)

        self.app.push_screen(ExportScreen(conv), exported)

    def action_toggle_thinking(self) -> None:
        session = self.session
        session.thinking = not session.thinking
        self.notify("reasoning models think before answering" if session.thinking else
                    "reasoning models answer without thinking (enable_thinking off, /no_think)", timeout=3)

    async def action_new_chat(self) -> None:
        if self.busy:
            self.notify("cancel the current reply first (Esc)", severity="warning")
            return
        self.session.reset()
        self.editing.exchange = None
        self.reset_prompt()
        await self.chat_log.clear()
        panel = self.query_one(StatsPanel)
        panel.reset()  # no turn of the new conversation has run: the last one's figures are not its own
        panel.show_totals(self.session.totals)  # reset() restarted them
        self.refresh_title()
        self.refresh_header()
        self.notify("new conversation", timeout=2)
