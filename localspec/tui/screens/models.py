"""The models screen (Textual): catalog pairs and installed files, downloads with progress bars, the active pair.

Downloads run in a worker thread (models.install.pull_pair) and report through PullProgress messages; "x" sets the
cancel event, the download stops between chunks and keeps its partial file for the next attempt.
"""

from __future__ import annotations

import threading
import time

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Label, ProgressBar, Static

from localspec.errors import LocalspecError
from localspec.models.catalog import format_mb, load_catalog
from localspec.models.install import pair_state, pull_pair
from localspec.models.paths import get_paths
from localspec.models.registry import load_registry
from localspec.models.resolve import Selection, demo_model_path
from localspec.tui.messages import PullFinished, PullProgress

DEMO = "demo"
_PROGRESS_EVERY = 0.1  # seconds between progress messages per file (the hub reports every chunk)


class ModelsScreen(Screen):
    BINDINGS = [
        Binding("escape", "close", "Back"),
        Binding("u", "use", "Use pair"),
        Binding("p", "pull", "Download"),
        Binding("x", "cancel_pull", "Cancel download"),
        Binding("s", "make_default", "Set default"),
        Binding("r", "refresh", "Refresh"),
    ]

    def __init__(self, notice: str | None = None) -> None:
        super().__init__(id="models")
        self.notice = notice
        self.pulling: str | None = None
        self.outcome: str | None = None  # how the last download ended: "ready", "cancelled" or the error
        self._cancel: threading.Event | None = None
        self._bars: dict[str, ProgressBar] = {}

    def compose(self) -> ComposeResult:
        yield Static(self.notice or "", id="models-notice")
        with VerticalScroll(id="models-body"):
            yield Label("Model pairs  (Enter/u: use · p: download · s: set default)", classes="heading")
            yield DataTable(id="pairs", cursor_type="row", zebra_stripes=True)
            yield Label("Installed files", classes="heading")
            yield DataTable(id="files", cursor_type="row", zebra_stripes=True)
            yield Vertical(id="downloads")
        yield Footer()

    def set_notice(self, notice: str | None) -> None:
        """Why the user is here (first run: no model installed); None hides it."""
        self.notice = notice
        if self.is_mounted:
            self._show_notice()

    def _show_notice(self) -> None:
        box = self.query_one("#models-notice", Static)
        box.update(self.notice or "")
        box.display = bool(self.notice)

    def on_screen_resume(self) -> None:
        self.action_refresh()

    def on_mount(self) -> None:
        self._show_notice()
        pairs = self.query_one("#pairs", DataTable)
        pairs.add_columns("", "pair", "state", "size", "description")
        self.query_one("#files", DataTable).add_columns("repository", "file", "size", "status")
        self.action_refresh()
        pairs.focus()

    # -- tables ---------------------------------------------------------------------------------------------------
    def action_refresh(self) -> None:
        try:
            catalog = load_catalog()
            registry = load_registry(get_paths().registry_file)
        except LocalspecError as exc:
            self.notify(str(exc), severity="error")
            return
        session = self.app.session
        active = session.info.pair if session.info else None
        if session.info and session.info.demo:
            active = DEMO
        default = session.settings.default_pair or catalog.default
        pairs = self.query_one("#pairs", DataTable)
        keep = pairs.cursor_row
        pairs.clear()
        for name, p in catalog.pairs.items():
            mark = ("● " if name == active else "  ") + ("★" if name == default else " ")
            pairs.add_row(mark, name, pair_state(p, registry), format_mb(p.size), p.description, key=name)
        for name, up in registry.pairs.items():
            mark = ("● " if name == active else "  ") + ("★" if name == default else " ")
            desc = f"{up.target} + {up.draft or '(no draft model)'}"
            pairs.add_row(mark, name, "yours", "", desc, key=name)
        if demo_model_path() is not None:
            pairs.add_row("● " if active == DEMO else "  ", DEMO, "installed", "",
                          "SmolLM2-135M-Instruct, no draft model (packaged demo)", key=DEMO)
        if keep and keep < pairs.row_count:
            pairs.move_cursor(row=keep)
        files = self.query_one("#files", DataTable)
        files.clear()
        for f in registry.files:
            files.add_row(f.repo or "(local)", f.file, format_mb(f.size), f.status())
        if not registry.files:
            files.add_row("", "no model files yet: select a pair and press p to download it", "", "")

    def selected(self) -> str | None:
        table = self.query_one("#pairs", DataTable)
        if table.row_count == 0:
            return None
        return table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value

    # -- actions --------------------------------------------------------------------------------------------------
    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table.id == "pairs":
            self.action_use()

    def action_use(self) -> None:
        name = self.selected()
        if name is None:
            return
        try:
            if name == DEMO:
                sel = Selection(demo_model_path(), None, None, True)
            else:
                sel = self.app.session.select(pair=name)
        except LocalspecError as exc:
            self.notify(f"{exc}  (press p to download it)", severity="error")
            return
        self.app.switch_pair(sel)
        self.dismiss()

    def action_make_default(self) -> None:
        name = self.selected()
        if name is None or name == DEMO:
            return
        try:
            self.app.set_config("default_pair", name)
        except LocalspecError as exc:
            self.notify(str(exc), severity="error")
            return
        self.notify(f"'{name}' is now the default pair", timeout=3)
        self.action_refresh()

    def action_close(self) -> None:
        if self.pulling:
            self.notify("a download is running: it continues in the background (x cancels it)", timeout=3)
        self.dismiss()

    def action_pull(self) -> None:
        name = self.selected()
        if name is None or name == DEMO:
            return
        if self.pulling:
            self.notify(f"already downloading '{self.pulling}'", severity="warning")
            return
        self.pulling = name
        self._cancel = threading.Event()
        self._bars.clear()
        self.query_one("#downloads").remove_children()
        self.query_one("#downloads").mount(Label(f"Downloading '{name}' (x cancels)", classes="heading"))
        self._pull(name, self._cancel)

    def action_cancel_pull(self) -> None:
        if self._cancel is not None and self.pulling:
            self._cancel.set()

    @work(thread=True, group="pull")
    def _pull(self, name: str, cancel: threading.Event) -> None:
        from localspec.models.hub import DownloadCancelled

        last: dict[tuple[str, str], float] = {}

        def progress(p) -> None:
            now = time.monotonic()
            key = (p.file, p.phase)
            if p.done == p.total or now - last.get(key, 0.0) >= _PROGRESS_EVERY:
                last[key] = now
                self.post_message(PullProgress(p.file, p.phase, p.done, p.total))

        try:
            pull_pair(name, progress=progress, cancel=cancel)
        except DownloadCancelled:
            self.post_message(PullFinished(name, None, cancelled=True))
        except LocalspecError as exc:
            self.post_message(PullFinished(name, str(exc)))
        except Exception as exc:  # never a traceback in the UI
            self.post_message(PullFinished(name, f"download failed: {type(exc).__name__}: {exc}"))
        else:
            self.post_message(PullFinished(name, None))

    def on_pull_progress(self, msg: PullProgress) -> None:
        bar = self._bars.get(msg.file)
        if bar is None:
            bar = self._bars[msg.file] = ProgressBar(total=msg.total, show_eta=False, id=None)
            self.query_one("#downloads").mount(Label(msg.file, classes="file"), bar)
        bar.update(total=msg.total, progress=msg.done)
        bar.set_class(msg.phase == "verify", "verifying")

    def on_pull_finished(self, msg: PullFinished) -> None:
        self.pulling = None
        self._cancel = None
        self.outcome = "cancelled" if msg.cancelled else msg.error or "ready"
        if msg.cancelled:
            self.notify(f"download of '{msg.name}' cancelled; pulling again resumes it", severity="warning")
        elif msg.error:
            self.notify(msg.error, severity="error", timeout=8)
        else:
            self.notify(f"pair '{msg.name}' is ready: press u to use it", timeout=4)
        self.action_refresh()
