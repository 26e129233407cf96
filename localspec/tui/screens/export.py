"""The export dialog (Ctrl+S): Markdown or JSON, to a path the user can edit (default: <data dir>/exports/...).

Dismissed with the path written, or None when cancelled. A file that already exists is not replaced: the dialog
says so and stays open.
"""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, RadioButton, RadioSet, Static

from localspec.conversations import Conversation, ConversationError, available_path, default_export_path, export
from localspec.tui.shown import line


class ExportScreen(ModalScreen[Path | None]):
    DEFAULT_CSS = """
    ExportScreen { align: center middle; background: $background 60%; }
    ExportScreen > Vertical { width: 90%; max-width: 110; height: auto; border: thick $primary;
                              background: $surface; padding: 1 2; }
    ExportScreen #export-error { color: $error; }
    ExportScreen RadioSet { layout: horizontal; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, conv: Conversation) -> None:
        super().__init__()
        self.conv = conv
        self.fmt = "md"

    def compose(self) -> ComposeResult:
        with Vertical():
            # A Static wraps (a Label would cut a long title and the keys after it at 80 columns).
            yield Static(line(f"Export {self.conv.display_title!r}: Enter writes the file, Esc cancels"))
            with RadioSet(id="export-format"):
                yield RadioButton("Markdown", value=True, id="fmt-md")
                yield RadioButton("JSON", id="fmt-json")
            yield Input(str(self._default("md")), id="export-path")
            yield Static("", id="export-error", markup=False)

    def on_mount(self) -> None:
        self.query_one("#export-path", Input).focus()

    def _default(self, fmt: str) -> Path:
        return available_path(default_export_path(self.conv, fmt))

    def on_radio_set_changed(self, event: RadioSet.Changed) -> None:
        fmt = "json" if event.pressed.id == "fmt-json" else "md"
        if fmt == self.fmt:
            return
        path = self.query_one("#export-path", Input)
        if path.value == str(self._default(self.fmt)):  # still the suggestion: follow the format
            path.value = str(self._default(fmt))
        self.fmt = fmt
        path.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.write(event.value)

    def write(self, dest: str) -> Path | None:
        try:
            path = export(self.conv, self.fmt, dest.strip() or None)
        except ConversationError as exc:
            self.query_one("#export-error", Static).update(line(exc))
            return None
        self.dismiss(path)
        return path

    def action_cancel(self) -> None:
        self.dismiss(None)
