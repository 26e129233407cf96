"""The localspec Textual app: owns the session, loads model pairs off the UI thread, answers tool approvals.

Tool approvals cross threads like this: the Toolbox calls `approve()` on the generating thread, which posts an
ApprovalAsked message carrying a Future and waits; the UI thread shows the modal and sets the Future's result.
Cancelling the turn, or quitting, answers "deny once": a question nobody answered never allows anything.
"""

from __future__ import annotations

import gc
import threading
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, cast

from textual import work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from localspec.errors import LocalspecError
from localspec.models.selection import Selection
from localspec.private_files import set_reporter
from localspec.settings.config_toml import load_config, set_config_value
from localspec.tools import ApprovalRequest, Decision
from localspec.tui.launch_options import AppOptions
from localspec.tui.messages import ApprovalAsked, ApprovalWithdrawn, PairFailed, PairLoaded
from localspec.tui.screens.approval import ApprovalScreen
from localspec.tui.screens.chat import ChatScreen
from localspec.tui.screens.help import HelpScreen
from localspec.tui.screens.models import ModelsScreen
from localspec.tui.screens.settings import SettingsScreen
from localspec.tui.session import ChatSession
from localspec.tui.shown import note

if TYPE_CHECKING:
    from localspec.tui.host import Host


class LocalspecApp(App):
    TITLE = "localspec"
    # Absolute paths: Textual resolves relative ones against the module of the (possibly sub-)class.
    CSS_PATH = [Path(__file__).parent / f"{name}.tcss" for name in ("app", "chat", "models", "settings", "approval")]
    BINDINGS = [Binding("ctrl+q", "quit", "Quit", priority=True), Binding("f1", "help", "Help", show=False),
                Binding("f5", "tools", "Tools", show=False)]

    def __init__(self, options: AppOptions | None = None, *, session: ChatSession | None = None) -> None:
        super().__init__()
        self.options = options or AppOptions()
        # Notes about stored files (permissions tightened, history not saved) become notices, not stray stderr
        # lines under the screen; those from before the screen exists wait for on_mount.
        self._early_notes: list[str] | None = []
        set_reporter(self._stored_files_note)
        self.session = session or ChatSession(self.options)
        self.session.toolbox.approver = self.approve
        self.turn_cancel: threading.Event | None = None  # the running turn's cancel event (set by the chat screen)
        self.last_transcript: Path | None = None
        self.loading = False  # a pair is being loaded
        self._open_questions: dict[int, ApprovalScreen] = {}
        self._quitting = threading.Event()

    # -- startup --------------------------------------------------------------------------------------------------
    @property
    def chat(self) -> ChatScreen:
        """The chat screen: always at the bottom of the screen stack (above Textual's blank default screen)."""
        return self._chat

    @property
    def models_screen(self) -> ModelsScreen:
        """The models screen: installed at mount and kept (a download outlives leaving the screen)."""
        return cast(ModelsScreen, self.get_screen("models"))

    def on_mount(self) -> None:
        # Move what exists now (modules, widgets, styles) out of the cyclic garbage collector's sight: full
        # collections otherwise scan it all on the UI thread, measured at 20-60 ms pauses mid-reply.
        gc.collect()
        gc.freeze()
        notes, self._early_notes = self._early_notes or [], None
        for early in notes:
            self._stored_files_note(early)
        self._apply_theme()
        self._chat = ChatScreen()
        self.install_screen(self._chat, name="chat")
        self.push_screen("chat")
        self.install_screen(ModelsScreen(), name="models")  # kept: a download outlives leaving the screen
        self.session.start_tools(self._tools_notice)  # MCP servers start beside the model; F5 shows them
        try:
            sel = self.session.initial_selection()
        except LocalspecError as exc:
            self.chat.set_status("no model")
            self.open_models(f"{exc}\nDownload a pair below (select it, press p), or start with --target PATH.")
            return
        self.switch_pair(sel)
        if getattr(sel, "demo", False) and self.session.settings.default_pair is None:
            # First run: no pair installed and none picked yet; the demo model loads behind the models screen.
            from localspec.tui.screens.models import FIRST_RUN

            self.open_models(FIRST_RUN, first_run=True)

    def _apply_theme(self) -> None:
        theme = self.session.settings.theme
        if theme in self.available_themes:
            self.theme = theme
        else:
            self.notify(note(f"unknown theme {theme!r} in the settings; using {self.theme}"), severity="warning",
                        markup=False)

    # -- models ---------------------------------------------------------------------------------------------------
    def switch_pair(self, sel) -> None:
        """Cancel any running reply, then load `sel` (a Selection of model files, or a remote server's
        RemoteConfig) in a worker; the chat shows the outcome."""
        self.chat.cancel_turn()
        self.loading = True
        what = sel.base_url if not isinstance(sel, Selection) else sel.pair or sel.target.name
        self.chat.set_status(f"{'connecting to' if not isinstance(sel, Selection) else 'loading'} {what}…")
        self._load(sel)

    @work(thread=True, exclusive=True, group="load")
    def _load(self, sel) -> None:
        try:
            info = self.session.load(sel)
        except LocalspecError as exc:
            self.post_message(PairFailed(str(exc)))
        except Exception as exc:  # e.g. llama.cpp refusing a file: a message, not a traceback
            self.post_message(PairFailed(f"could not load the model: {type(exc).__name__}: {exc}"))
        else:
            self.post_message(PairLoaded(info))

    async def on_pair_loaded(self, msg: PairLoaded) -> None:
        self.loading = False
        self.chat.set_status("ready")
        self.notify(note(f"loaded {msg.info.label}"), timeout=2, markup=False)
        if msg.info.warning:
            await self.chat.add_message("note", "warning: " + msg.info.warning)
        models = self.models_screen
        if self.screen is models:
            models.action_refresh()  # its ● moves to the pair now in use

    async def on_pair_failed(self, msg: PairFailed) -> None:
        self.loading = False
        self.chat.set_status("no model")
        await self.chat.add_message("error", msg.message + "  (F2 opens the models screen)")

    def open_models(self, notice: str | None = None, *, first_run: bool = False) -> None:
        screen = self.models_screen
        screen.first_run = first_run
        screen.set_notice(notice)
        if self.screen is not screen:
            self.push_screen(screen)

    def action_models(self) -> None:
        self.open_models()

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_settings(self) -> None:
        if not isinstance(self.screen, SettingsScreen):
            self.push_screen(SettingsScreen())  # a fresh form: it shows the file as it is now

    def action_tools(self) -> None:
        from localspec.mcp import default_config_path
        from localspec.tui.screens.tools import ToolsScreen

        if not isinstance(self.screen, ToolsScreen):
            path = self.options.mcp_config or default_config_path()
            self.push_screen(ToolsScreen(self.session.mcp, self.session.toolbox, path))

    def _stored_files_note(self, message: str) -> None:
        if self._early_notes is not None:
            self._early_notes.append(message)
        else:
            self.notify(note(message, 500), severity="warning", timeout=10, markup=False)

    def _tools_notice(self, message: str) -> None:
        """An MCP server failed or stopped (called from any thread; notify posts a message)."""
        self.notify(note(message), severity="warning", timeout=10, markup=False)

    # -- saved conversations --------------------------------------------------------------------------------------
    def action_sessions(self) -> None:
        from localspec.tui.screens.sessions import SessionsScreen

        if not isinstance(self.screen, SessionsScreen):
            self.push_screen(SessionsScreen())

    def open_conversation(self, cid: str) -> bool:
        """Load a saved conversation into the chat (not while a reply is being written)."""
        from localspec.conversations import ConversationError

        if self.chat.busy:
            self.notify("a reply is being written: cancel it (Esc) before opening another conversation",
                        severity="warning")
            return False
        try:
            conv = self.session.open_conversation(cid)
        except ConversationError as exc:
            self.notify(note(exc), severity="error", markup=False)
            return False
        while self.screen is not self.chat:
            self.pop_screen()
        self.call_later(self.chat.show_conversation)
        here = str(self.session.options.workspace)
        if conv.workspace and conv.workspace != here:  # its tool results name files in another folder
            self.notify(note(f"opened {conv.display_title!r}; it was held in {conv.workspace}, tools now work in {here}"),
                        severity="warning", timeout=6, markup=False)
        else:
            self.notify(note(f"opened {conv.display_title!r}"), timeout=2, markup=False)
        return True

    def delete_conversation(self, cid: str) -> None:
        from localspec.conversations import ConversationError

        was_open = cid == self.session.conversation_id
        if was_open and self.chat.busy:
            raise ConversationError("that conversation is being written to: cancel the reply (Esc) first")
        self.session.delete_conversation(cid)
        if was_open:
            self.call_later(self.chat.show_conversation)

    # -- settings -------------------------------------------------------------------------------------------------
    def reload_settings(self) -> None:
        before = self._backend_choice()
        loaded_with = self._load_settings()
        self.session.apply_settings(load_config(self.options.config_path))
        self._apply_theme()
        self.chat.refresh_header()
        after = self._backend_choice()
        if after != before and not isinstance(after, str):  # backend.* changed in the settings: switch now
            try:
                target = self.session.initial_selection()
            except LocalspecError as exc:
                self.notify(str(exc), severity="error")
                return
            self.switch_pair(target)
        elif loaded_with != self._load_settings() and self.session.selection is not None and not self.chat.busy:
            # The context size, threads, offload or drafters changed: they take a reload, done now (a small
            # model reloads in a second; a reply in progress keeps its model until the next load).
            self.switch_pair(self.session.selection)

    def _load_settings(self) -> tuple:
        """The settings a loaded pair was opened with (a change needs a reload)."""
        s = self.session.settings
        return (s.ctx_size, s.threads, s.target_gpu_layers, s.draft_gpu_layers, s.drafters, s.draft_max,
                s.draft_p_min)

    def _backend_choice(self):
        """The remote server the settings choose (None: local), or the error text when they are incomplete."""
        try:
            return self.session.remote_config()
        except LocalspecError as exc:
            return str(exc)

    def set_config(self, key: str, value) -> None:
        set_config_value(key, value, self.options.config_path)
        self.reload_settings()

    # -- tool approval --------------------------------------------------------------------------------------------
    def approve(self, request: ApprovalRequest) -> Decision:
        """The Toolbox's approver: runs on the generating thread and blocks until the user answers."""
        future: Future = Future()
        cancel = self.turn_cancel
        self.post_message(ApprovalAsked(request, future))
        while True:
            try:
                return future.result(timeout=0.05)
            except FutureTimeout:
                if self._quitting.is_set() or (cancel is not None and cancel.is_set()):
                    self.post_message(ApprovalWithdrawn(future))
                    return Decision.DENY_ONCE

    def on_approval_asked(self, msg: ApprovalAsked) -> None:
        future = msg.future
        screen = ApprovalScreen(msg.request)
        self._open_questions[id(future)] = screen

        def answered(decision: Decision | None) -> None:
            self._open_questions.pop(id(future), None)
            if not future.done():
                future.set_result(decision or Decision.DENY_ONCE)

        self.push_screen(screen, answered)

    def on_approval_withdrawn(self, msg: ApprovalWithdrawn) -> None:
        screen = self._open_questions.pop(id(msg.future), None)
        if screen is not None and screen.is_attached:
            screen.dismiss(Decision.DENY_ONCE)

    # -- command palette ------------------------------------------------------------------------------------------
    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        # Textual's own "Keys" lists generic widget keys; this app's keys are on its help screen.
        yield from (c for c in super().get_system_commands(screen) if c.title != "Keys")
        chat = self.chat
        yield SystemCommand("Keys", "This app's keys, what the statistics mean, where files go (F1)",
                            self.action_help)
        yield SystemCommand("Models", "Catalog and installed pairs: download, switch, set default (F2)",
                            self.action_models)
        yield SystemCommand("Settings", "Edit config.toml (F3)", self.action_settings)
        yield SystemCommand("Tools", "MCP servers and every tool the model can use; switch a server off (F5)",
                            self.action_tools)
        yield SystemCommand("Toggle token origins", "Colour each token by who proposed it (Ctrl+O)",
                            chat.action_toggle_origins)
        yield SystemCommand("Toggle statistics panel", "Show or hide live statistics (Ctrl+T)",
                            chat.action_toggle_stats)
        yield SystemCommand("Copy last reply", "Copy the last assistant message to the clipboard (Ctrl+Y)",
                            chat.action_copy_last)
        yield SystemCommand("Conversations", "Saved conversations: open, rename, delete, search (F4)",
                            self.action_sessions)
        yield SystemCommand("Export conversation", "Write it as Markdown or JSON, where you choose (Ctrl+S)",
                            chat.action_save_transcript)
        yield SystemCommand("New conversation", "Forget the conversation so far (Ctrl+N)", chat.action_new_chat)
        yield SystemCommand("Cancel reply", "Stop the reply being written; keep its text (Esc)", chat.action_cancel)
        yield SystemCommand("Regenerate last reply", "Write the last reply again (Ctrl+G)", chat.action_regenerate)
        yield SystemCommand("Edit a message", "Up from an empty prompt focuses the last message: e edits and resends "
                                              "it, r regenerates its reply, d deletes it (Up/Down move)",
                            lambda: chat.on_prompt_input_up_from_empty(None))
        on = self.session.tools_on
        yield SystemCommand(f"Tools {'off' if on else 'on'} for this chat",
                            "Whether the model is offered the tools (F6; off: a short prompt, no calls)",
                            chat.action_toggle_tools)
        for name in self.session.tool_names():
            yield SystemCommand(f"Use tool {name}", f"Your next message calls {name} (like /tool {name})",
                                lambda n=name: self.call_later(chat.use_tool, n))
        for mode in ("ask", "read-only", "auto"):
            yield SystemCommand(f"Approval mode: {mode}", "How tool calls are approved (this session)",
                                lambda m=mode: self._set_mode(m))

    def _set_mode(self, mode: str) -> None:
        self.session.toolbox.policy.mode = mode
        self.chat.refresh_header()
        self.notify(f"approval mode: {mode}", timeout=2)

    # -- shutdown -------------------------------------------------------------------------------------------------
    async def action_quit(self) -> None:
        self._stop_work()
        await super().action_quit()

    def _stop_work(self) -> None:
        self._quitting.set()
        if self.turn_cancel is not None:
            self.turn_cancel.set()

    def on_unmount(self) -> None:
        set_reporter(None)
        gc.unfreeze()
        self._stop_work()
        self.session.shutdown(timeout=5.0)  # frees the models once the cancelled turn has let go of them


if TYPE_CHECKING:  # the screens reach the app through host() (tui/host.py), which says it is a Host
    _is_host: type[Host] = LocalspecApp
