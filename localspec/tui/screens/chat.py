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
from typing import Sequence

from textual import events, work
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Footer, Static

from localspec.tui.host import host
from localspec.tui.livestats import StatsView, summary_line
from localspec.tui.messages import TurnUpdate
from localspec.tui.replay import CANCELLED
from localspec.tui.shown import line, note
from localspec.agent import Done, Notice, ToolCallFinished, ToolCallStarted
from localspec.tui.turn import TextChunk
from localspec.turns import PromptRead
from localspec.turns.events import reading_text
from localspec.tui.widgets.message import ChatMessage
from localspec.tui.widgets.prompt_input import PromptInput
from localspec.tui.widgets.reasoning import ReasoningBlock
from localspec.tui.widgets.stats_panel import StatsPanel
from localspec.tui.widgets.toolcard import ToolCard

WIDE_COLUMNS = 100  # narrower: the panel folds into one line and the footer keeps only the main keys
PROMPT_PLACEHOLDER = "Message · Enter sends · Ctrl+J new line · ↑ edits · /tool NAME forces a tool · F1 help"
READING_FROM = 128  # tokens to read before the wait is worth a status line (a short prompt is read in a blink)


def short_path(path: Path) -> str:
    """A folder as the header shows it: under the home folder as ~/..."""
    try:
        return "~/" + str(path.relative_to(Path.home())) if path != Path.home() else "~"
    except ValueError:
        return str(path)


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
        self._current: ChatMessage | None = None
        self._thinking: ReasoningBlock | None = None  # the reasoning block being written
        self._cards: dict[str, ToolCard] = {}
        self._cancel: threading.Event | None = None
        self._status = "starting"
        self.narrow = False  # below WIDE_COLUMNS
        self.stats_shown: bool | None = None  # Ctrl+T's choice; None: follow the width
        self._editing: int | None = None  # the exchange (from the end, -1: the last) a resent message replaces
        self._title = ""  # the conversation's title, shown in the top bar

    def compose(self) -> ComposeResult:
        with Horizontal(id="header"):
            yield Static("", id="topbar")
            yield Static("", id="where")
        with Horizontal(id="body"):
            yield VerticalScroll(id="log")
            yield StatsPanel(id="stats")
        yield Static(summary_line(None), id="stats-line")
        yield PromptInput(placeholder=PROMPT_PLACEHOLDER, id="prompt")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#log").anchor()  # follow the newest text while a reply streams
        self.query_one("#prompt").focus()
        self.set_status(self._status)
        self.refresh_header()
        self._layout(self.app.size.width)
        if host(self).session.conversation_id is not None:  # --continue / --resume: show what was said
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
        footer = self.query_one(Footer)
        footer.compact = narrow
        footer.show_command_palette = not narrow  # at 80 columns the keys need the room

    def refresh_header(self) -> None:
        """The right of the top bar: workspace folder, tools on or off, approval mode."""
        session = host(self).session
        folder = session.options.workspace.name if self.narrow else short_path(session.options.workspace)
        tools = "on" if session.tools_on else "off"
        if session.tools_on and session.next_tool:
            tools = f"next: {session.next_tool}"
        key = "" if self.narrow else " (F6)"
        text = f"{folder} · tools {tools}{key} · approval {session.toolbox.policy.mode} "
        for bar in self.query("#where").results(Static):
            bar.update(line(text))  # a folder name can hold escapes or markup

    def refresh_title(self) -> None:
        """The conversation's title in the top bar: its saved title (renamed or not), else its first message."""
        from localspec.conversations.store import title_from

        session = host(self).session
        title = ""
        if session.conversations is not None and session.conversation_id is not None:
            try:
                title = session.conversations.get(session.conversation_id, messages=False).title
            except Exception:  # a store that went away: the title is only a label
                title = ""
        if not title:
            first = next((m for m in session.history if m.get("role") == "user"), None)
            title = title_from(str(first.get("content") or "")) if first else ""
        self._title = title
        self.set_status(self._status)

    # -- status and bindings --------------------------------------------------------------------------------------
    @property
    def status(self) -> str:
        """What the top bar says the app is doing: "loading …", "ready", "generating…", "no model"."""
        return self._status

    def set_status(self, status: str) -> None:
        self._status = status
        info = host(self).session.info
        pair = info.label if info else "no model"
        title = self._title
        limit = 24 if self.narrow else 48
        if len(title) > limit:
            title = title[:limit - 1].rstrip() + "…"
        head = f" {title} · " if title else " localspec · "
        for bar in self.query("#topbar").results(Static):  # none yet before the screen is composed
            bar.update(line(f"{head}{pair} · {status}"))  # the title is the user's text, the label file names

    def check_action(self, action: str, parameters) -> bool | None:
        if action == "cancel":
            return self.busy or self._editing is not None  # hidden when there is nothing to stop
        if action in ("new_chat", "toggle_thinking"):  # hidden while a reply is written or a message edited: esc
            return not self.busy and self._editing is None  # (Stop) takes their place in the footer
        if action in ("edit_message", "regenerate_message", "delete_message"):
            focused = self.focused
            role = focused.role if isinstance(focused, ChatMessage) else None
            if action == "edit_message":
                return role == "user"
            return role in ("user", "assistant", "note", "error", "call")
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
                            "ready" if host(self).session.loaded else "no model")

    # -- sending --------------------------------------------------------------------------------------------------
    async def on_prompt_input_submitted(self, event: PromptInput.Submitted) -> None:
        text = event.text.strip()
        if not text:
            return
        command = text.split(maxsplit=1)[0] if text.startswith("/") else ""
        if command in ("/tool", "/tools"):  # chat commands; any other "/..." is a message like any other
            event.prompt.value = ""
            await self.chat_command(command, text[len(command):].strip())
            return
        if self.busy:
            self.notify("a reply is still being written: wait, or press Esc to cancel it", severity="warning")
            return
        if not host(self).session.loaded:
            self.notify("no model is loaded yet", severity="warning")
            return
        # Keys typed right after Enter may already be in the prompt: keep them, drop only what was sent.
        typed = event.prompt.text
        event.prompt.value = typed[len(event.text):] if typed.startswith(event.text) else typed
        editing, self._editing = self._editing, None
        if editing is not None:  # the edited message replaces the original and everything after it
            host(self).session.take_back(editing)
            await self.show_conversation(restart=False)
            self._placeholder()
        await self.send(text)

    async def send(self, text: str, tool: str | None = None) -> None:
        await self.add_message("user", text)
        self._cancel = threading.Event()
        host(self).turn_cancel = self._cancel
        self.busy = True
        self._run_turn(text, self._cancel, tool)
        self.refresh_header()  # a tool set for this message is used now
        if not self._title:  # a new chat's title is its first message (the store has not seen it yet)
            from localspec.conversations.store import title_from

            self._title = title_from(text)
            self.set_status(self._status)

    @work(thread=True, group="turn")
    def _run_turn(self, text: str, cancel: threading.Event, tool: str | None = None) -> None:
        host(self).session.run_turn(text, lambda ev: self.post_message(TurnUpdate(ev)), cancel, tool=tool)

    def action_cancel(self) -> None:
        if self._cancel is not None and self.busy:
            self._cancel.set()
            self.set_status("cancelling…")
        elif self._editing is not None:
            self._editing = None
            self.query_one(PromptInput).value = ""
            self._placeholder()

    # -- chat commands: /tool NAME [message], /tools on|off ---------------------------------------------------
    async def chat_command(self, command: str, rest: str) -> None:
        session = host(self).session
        if command == "/tools":
            if rest not in ("on", "off"):
                await self.add_message("note", "/tools on or /tools off: whether this chat offers the tools (F6)")
                return
            self.set_tools(rest == "on")
            return
        names = session.tool_names()
        if not rest:
            await self.add_message("note", "/tool NAME [message]: the next message must call NAME (the model "
                                           "fills in the arguments). Tools: " + ", ".join(names))
            return
        name, _, message = rest.partition(" ")
        if name not in names:
            await self.add_message("error", f"no tool {name!r}; the tools are: {', '.join(names)}")
            return
        await self.use_tool(name, message.strip())

    async def use_tool(self, name: str, message: str = "") -> None:
        """Make the next message (or `message`, sent now) call the tool `name`: the agent seen at work with any
        model, even one too small to choose a tool by itself."""
        session = host(self).session
        if message:
            if self.busy or not session.loaded:
                self.notify("wait for the reply (or the model) before sending", severity="warning")
                return
            await self.send(message, tool=name)
            return
        session.next_tool = name
        if not session.tools_on:
            self.set_tools(True, quiet=True)
        self.refresh_header()
        self.notify(f"your next message calls {name}", timeout=3)

    def set_tools(self, on: bool, *, quiet: bool = False) -> None:
        session = host(self).session
        session.tools_on = on
        if not on:
            session.next_tool = None
        self.refresh_header()
        if not quiet:
            self.notify("tools on: the model may call the tools" if on else
                        "tools off for this chat: the model only answers (a short prompt, a fast first token)",
                        timeout=3)

    def action_toggle_tools(self) -> None:
        self.set_tools(not host(self).session.tools_on)

    # -- the messages: focus, edit and resend, regenerate, delete --------------------------------------------------
    def _messages(self) -> list[ChatMessage]:
        return [m for m in self.query_one("#log").children if isinstance(m, ChatMessage)]

    def on_prompt_input_up_from_empty(self, event: PromptInput.UpFromEmpty | None) -> None:  # None: the palette
        mine = [m for m in self._messages() if m.role in ("user", "assistant")]
        if mine:
            mine[-1].focus()
            mine[-1].scroll_visible(animate=False)

    def action_step_message(self, delta: int) -> None:
        messages = self._messages()
        focused = self.focused
        if focused not in messages:
            return
        i = messages.index(focused) + delta
        if i >= len(messages):
            self.action_focus_prompt()
        elif i >= 0:
            messages[i].focus()
            messages[i].scroll_visible(animate=False)

    def action_focus_prompt(self) -> None:
        self.query_one(PromptInput).focus()

    def _exchange(self, widget) -> int | None:
        """The exchange (counted from the end: -1 is the last) a widget of the log belongs to: its user message and
        the reply to it. None above the first user message."""
        children = list(self.query_one("#log").children)
        if widget not in children:
            return None
        users = [i for i, w in enumerate(children) if isinstance(w, ChatMessage) and w.role == "user"]
        at = children.index(widget)
        before = [i for i in users if i <= at]
        if not before:
            return None
        return users.index(before[-1]) - len(users)

    def _editable(self) -> int | None:
        if self.busy:
            self.notify("a reply is being written: cancel it (Esc) first", severity="warning")
            return None
        k = self._exchange(self.focused)
        if k is None:
            self.notify("focus a message of the conversation first (Up from an empty prompt)", severity="warning")
        return k

    def action_edit_message(self) -> None:
        k = self._editable()
        if k is None:
            return
        focused = self.focused
        assert isinstance(focused, ChatMessage)  # check_action lets this run on a focused user message only
        prompt = self.query_one(PromptInput)
        prompt.value = focused.text
        self._editing = k
        prompt.placeholder = ""
        prompt.focus()
        self.refresh_bindings()
        self.notify("editing: Enter sends it in place of the original (and of what followed); Esc cancels",
                    timeout=4)

    def _placeholder(self) -> None:
        self.query_one(PromptInput).placeholder = PROMPT_PLACEHOLDER
        self.refresh_bindings()

    async def action_regenerate_message(self) -> None:
        k = self._editable()
        if k is not None:
            await self.regenerate(k)

    async def action_regenerate(self) -> None:
        """Ctrl+G: write the last reply again."""
        if self.busy:
            self.notify("a reply is being written: cancel it (Esc) first", severity="warning")
            return
        if not host(self).session.user_positions():
            self.notify("nothing to regenerate yet", severity="warning")
            return
        await self.regenerate(-1)

    async def regenerate(self, k: int) -> None:
        session = host(self).session
        if not session.loaded:
            self.notify("no model is loaded yet", severity="warning")
            return
        text = session.take_back(k)
        await self.show_conversation(restart=False)
        await self.send(text)

    def action_delete_message(self) -> None:
        from localspec.tui.screens.sessions import ConfirmScreen

        k = self._editable()
        if k is None:
            return
        start, stop = host(self).session.exchange(k)

        async def done(yes: bool | None) -> None:
            if yes:
                gone = host(self).session.delete_exchange(k)
                await self.show_conversation(restart=False)
                self.notify(f"deleted {gone} message{'s' if gone != 1 else ''}", timeout=2)

        n = stop - start
        self.app.push_screen(ConfirmScreen(f"Delete this message and the reply to it ({n} message"
                                           f"{'s' if n != 1 else ''} of the conversation)? The model will not see "
                                           "them again.  y: delete · n / Esc: keep"), done)

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
        if isinstance(ev, PromptRead):
            if ev.total >= READING_FROM:  # narrow: the figures are on the summary line below, not in the top bar
                self.set_status("reading prompt… (Esc cancels)" if self.narrow else
                                reading_text(ev.done, ev.total, ev.rate) + " (Esc cancels)")
                stats.reading(ev.done, ev.total, ev.rate)
            return
        if self.busy and self._status.startswith("reading prompt"):
            self.set_status("generating… (Esc cancels)")
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
        elif isinstance(ev, ToolCallStarted):
            await self._close_current()
            card = ToolCard(ev.call_id, ev.name, ev.arguments)
            self._cards[ev.call_id] = card
            await self.query_one("#log").mount(card)
        elif isinstance(ev, ToolCallFinished):
            started = self._cards.pop(ev.call_id, None)
            if started is not None:
                started.finish(ev.result.ok, ev.result.content, ev.result.error)
        elif isinstance(ev, Notice):
            await self._close_current()
            await self.add_message("note", ev.message)
        elif isinstance(ev, Done):
            result = ev.result
            await self._close_current()
            if result.error:
                await self.add_message("error", result.error + "  (Ctrl+G tries again)")
            if result.steps:
                stats.show(StatsView.of(result.stats, first_token_s=result.first_token_s), final=True)
            stats.show_totals(host(self).session.totals)
            if result.finish_reason == "cancelled":
                await self.add_message("note", CANCELLED)
            elif result.finish_reason in ("length", "max_steps"):
                if result.finish_reason == "length":
                    await self.add_message("note", f"stopped at the token limit ({host(self).session.max_tokens} "
                                                   "tokens): F3 → This conversation → max tokens raises it")
                else:
                    await self.add_message("note", "stopped at the step limit")
            self.busy = False
            self.refresh_title()
            self.refresh_header()

    def show_stats(self, view: StatsView, rates: Sequence[float] = ()) -> None:
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

    def action_sessions(self) -> None:
        host(self).action_sessions()

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

        session = host(self).session
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

    async def show_conversation(self, *, restart: bool = True) -> None:
        """Redraw the log from the session's history (a reopened, deleted or edited conversation); `restart`: it
        is another conversation, so the panel's turn figures go and its totals are that conversation's."""
        from localspec.tui.replay import show_history

        self._cards.clear()
        self._current = None
        log = self.query_one("#log")
        await log.remove_children()
        await show_history(log, [m for m in host(self).session.history if m.get("role") != "system"],
                           origins=self.origins)
        panel = self.query_one(StatsPanel)
        if restart:
            panel.reset()
            self._editing = None
            self._placeholder()
        panel.show_totals(host(self).session.totals)
        log.scroll_end(animate=False)
        self.refresh_title()
        self.refresh_header()

    def action_toggle_thinking(self) -> None:
        session = host(self).session
        session.thinking = not session.thinking
        self.notify("reasoning models think before answering" if session.thinking else
                    "reasoning models answer without thinking (enable_thinking off, /no_think)", timeout=3)

    async def action_new_chat(self) -> None:
        if self.busy:
            self.notify("cancel the current reply first (Esc)", severity="warning")
            return
        host(self).session.reset()
        self._cards.clear()
        self._editing = None
        self._placeholder()
        await self.query_one("#log").remove_children()
        panel = self.query_one(StatsPanel)
        panel.reset()  # no turn of the new conversation has run: the last one's figures are not its own
        panel.show_totals(host(self).session.totals)  # reset() restarted them
        self.refresh_title()
        self.refresh_header()
        self.notify("new conversation", timeout=2)
