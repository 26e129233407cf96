"""The saved conversations screen (F4): search titles, open, rename, delete. `localspec sessions` is the same, headless.

The list comes from the conversation store the session records into; opening one hands it to the app, which loads
it into the chat (refused while a reply is being written).
"""

from __future__ import annotations

from datetime import datetime

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Footer, Input, Label, Static

from localspec.conversations import ConversationError
from localspec.tui.host import host
from localspec.tui.shown import line, note
from localspec.tui.widgets.rowtable import RowTable

HELP = "Enter opens · r renames · d deletes · / searches titles and messages · Esc goes back"


class SessionsScreen(Screen):
    DEFAULT_CSS = """
    SessionsScreen #sessions-help { color: $text-muted; padding: 0 1; }
    SessionsScreen #sessions-search { margin: 0 1; }
    SessionsScreen #sessions { height: 1fr; margin: 0 1; }
    SessionsScreen #sessions-empty { padding: 1 2; color: $text-muted; }
    """
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("r", "rename", "Rename"),
        Binding("d", "delete", "Delete"),
        Binding("slash", "search", "Search"),
    ]

    def __init__(self) -> None:
        super().__init__(id="sessions-screen")
        self.ids: list[str] = []  # row order

    def compose(self) -> ComposeResult:
        yield Label("Saved conversations", classes="heading")
        yield Static(HELP, id="sessions-help")
        yield Input(placeholder="Search titles and messages (/)", id="sessions-search")
        yield RowTable(id="sessions", cursor_type="row", zebra_stripes=True)
        yield Static("", id="sessions-empty")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(DataTable).add_columns(" ", "Title", "Last active", "Msgs", "Pair", "ID")
        self.refresh_list()
        self.query_one(DataTable).focus()

    @property
    def store(self):
        return host(self).session.conversations

    def selected(self) -> str | None:
        table = self.query_one(DataTable)
        if not self.ids or table.cursor_row is None or not 0 <= table.cursor_row < len(self.ids):
            return None
        return self.ids[table.cursor_row]

    def refresh_list(self, keep: str | None = None) -> None:
        table = self.query_one(DataTable)
        empty = self.query_one("#sessions-empty", Static)
        keep = keep or self.selected()
        table.clear()
        self.ids = []
        if self.store is None:
            empty.update("Conversations are not being saved in this session.")
            return
        search = self.query_one("#sessions-search", Input).value.strip()
        try:
            convs = self.store.list(search or None)
        except ConversationError as exc:
            empty.update(line(exc))
            return
        current = host(self).session.conversation_id
        for c in convs:
            when = datetime.fromtimestamp(c.updated).strftime("%Y-%m-%d %H:%M")
            # Stored text: escaped (ESC, OSC, U+202E) and never read as markup (a str cell would be).
            table.add_row("●" if c.id == current else "", line(c.display_title, 200), when, str(c.message_count),
                          line(c.pair or "-", 60), line(c.id), key=c.id)
            self.ids.append(c.id)
        if not convs:
            empty.update(line(f"No conversation has {search!r} in its title or messages.") if search else
                         "No saved conversations yet: each chat is saved from its first message.")
        else:
            empty.update("")
        if keep in self.ids:
            table.move_cursor(row=self.ids.index(keep))

    # -- events and actions ---------------------------------------------------------------------------------------
    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "sessions-search":
            self.refresh_list()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "sessions-search":
            self.query_one(DataTable).focus()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        cid = event.row_key.value
        if cid:
            host(self).open_conversation(cid)

    def action_search(self) -> None:
        self.query_one("#sessions-search", Input).focus()

    def action_back(self) -> None:
        search = self.query_one("#sessions-search", Input)
        if search.has_focus:  # Esc in the search: clear it, and the list takes the keys again
            search.value = ""
            self.query_one(DataTable).focus()
            return
        self.app.pop_screen()

    def on_key(self, event) -> None:
        """Down (or Up) in the search goes to the list, as Enter does: the keys that move in a list work there."""
        search = self.query_one("#sessions-search", Input)
        if search.has_focus and event.key in ("down", "up"):
            event.stop()
            self.query_one(DataTable).focus()

    def action_rename(self) -> None:
        cid = self.selected()
        if cid is None or self.store is None:
            return
        try:
            title = self.store.get(cid, messages=False).title
        except ConversationError as exc:
            self.notify(note(exc), severity="error", markup=False)
            return

        def done(new: str | None) -> None:
            if not new:
                return
            try:
                self.store.rename(cid, new)
            except ConversationError as exc:
                self.notify(note(exc), severity="error", markup=False)
                return
            self.refresh_list(keep=cid)
            self.notify(note(f"renamed to {new.strip()!r}"), timeout=2, markup=False)

        self.app.push_screen(RenameScreen(title), done)

    def action_delete(self) -> None:
        cid = self.selected()
        if cid is None or self.store is None:
            return
        try:
            conv = self.store.get(cid, messages=False)
        except ConversationError as exc:
            self.notify(note(exc), severity="error", markup=False)
            return

        def done(yes: bool | None) -> None:
            if not yes:
                return
            try:
                host(self).delete_conversation(cid)
            except ConversationError as exc:
                self.notify(note(exc), severity="error", markup=False)
                return
            self.refresh_list()
            self.notify(note(f"deleted {conv.display_title!r}"), timeout=2, markup=False)

        self.app.push_screen(ConfirmScreen(note(f"Delete {conv.display_title!r} ({conv.message_count} messages)? "
                                                "This cannot be undone.  y: delete · n / Esc: keep")), done)


class RenameScreen(ModalScreen[str | None]):
    DEFAULT_CSS = """
    RenameScreen { align: center middle; background: $background 60%; }
    RenameScreen > Vertical { width: 70; height: auto; border: thick $primary; background: $surface; padding: 1 2; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str) -> None:
        super().__init__()
        self.old = title

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("New title (Enter saves, Esc cancels)")
            # The stored title, escaped: what the field shows is what gets saved (no control characters).
            yield Input(str(line(self.old)), id="rename-title")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ConfirmScreen(ModalScreen[bool]):
    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; background: $background 60%; }
    ConfirmScreen > Vertical { width: 70; height: auto; border: thick $error; background: $surface; padding: 1 2; }
    """
    BINDINGS = [Binding("y", "answer(True)", "Yes"), Binding("n,escape", "answer(False)", "No")]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self.question, id="confirm-question", markup=False)

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
