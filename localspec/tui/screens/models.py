"""The models screen (Textual): catalog pairs and installed files, downloads with progress bars, the active pair.

Downloads run in a worker thread (models.install.pull_pair) and report through PullProgress messages; "x" sets the
cancel event, the download stops between chunks and keeps its partial file for the next attempt. How a download
ended stays on the screen (the screen is kept while the app runs): a failure shows its reason and that p retries.

The packaged demo model is the pair "demo" (models/selection.py): usable and settable as the default like any other.
"""

from __future__ import annotations

import threading
import time

from rich.text import Text
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
from localspec.models.selection import DEMO, DEMO_DESCRIPTION, demo_model_path, demo_selection
from localspec.tui.host import host
from localspec.tui.messages import PullFinished, PullProgress
from localspec.tui.shown import line, note, prose
from localspec.tui.widgets.rowtable import RowTable

LEGEND = "●: the pair in use · ★: the default pair (loaded at start; s sets it)"
FIRST_RUN = ("Welcome to localspec. The demo model (SmolLM2-135M, no draft model) is installed and loading: Esc "
             "chats with it now. It can: short answers, and the whole app at work (statistics, saved chats, "
             "approvals). It cannot: choose a tool by itself, or be trusted with facts or code. To see the agent "
             "work anyway, force a call: /tool list_dir what is here? (or /tool run_shell list the files: it asks "
             "before running). For real agent work download qwen3-1.7b (2.5 GB, a laptop CPU is enough): select it "
             "below, p, then Enter. The pair you use becomes the default; this screen does not open by itself again.")
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
        self.failed: dict[str, str] = {}  # pair -> why its last download failed (until a retry succeeds)
        self.first_run = False  # opened because nothing was chosen yet: leaving it with the demo loaded picks it
        self._cancel: threading.Event | None = None
        self._bars: dict[str, ProgressBar] = {}

    def compose(self) -> ComposeResult:
        yield Static(prose(self.notice or ""), id="models-notice")
        with VerticalScroll(id="models-body"):
            yield Label("Model pairs  (Enter/u: use · p: download · s: set default)", classes="heading")
            yield Static(LEGEND, id="models-legend")
            yield RowTable(id="pairs", cursor_type="row", zebra_stripes=True)
            yield Label("Installed files", classes="heading")
            yield RowTable(id="files", cursor_type="row", zebra_stripes=True)
            yield Vertical(id="downloads")
        yield Footer()

    def set_notice(self, notice: str | None) -> None:
        """Why the user is here (first run: no model installed); None hides it."""
        self.notice = notice
        if self.is_mounted:
            self._show_notice()

    def _show_notice(self) -> None:
        box = self.query_one("#models-notice", Static)
        box.update(prose(self.notice or ""))  # it may quote an error: escaped, never markup
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
            self.notify(note(exc), severity="error", markup=False)
            return
        session = host(self).session
        active = session.info.pair if session.info else None
        if session.info and session.info.demo:
            active = DEMO
        default = session.settings.default_pair or self._starts_with()
        pairs = self.query_one("#pairs", DataTable)
        keep = pairs.cursor_row
        pairs.clear()
        for name, p in catalog.pairs.items():
            mark = ("● " if name == active else "  ") + ("★" if name == default else " ")
            state = pair_state(p, registry)
            if name in self.failed and state != "installed":
                state = "failed (p retries)"
            pairs.add_row(mark, line(name), state, format_mb(p.size), line(p.description), key=name)
        for name, up in registry.pairs.items():
            mark = ("● " if name == active else "  ") + ("★" if name == default else " ")
            desc = f"{up.target} + {up.draft or '(no draft model)'}"
            pairs.add_row(mark, line(name), "yours", "", line(desc), key=name)
        if demo_model_path() is not None:
            mark = ("● " if active == DEMO else "  ") + ("★" if default == DEMO else " ")
            pairs.add_row(mark, DEMO, "installed", "", Text(DEMO_DESCRIPTION), key=DEMO)
        if keep and keep < pairs.row_count:
            pairs.move_cursor(row=keep)
        files = self.query_one("#files", DataTable)
        files.clear()
        for f in registry.files:
            files.add_row(line(f.repo or "(local)"), line(f.file), format_mb(f.size), line(f.status()))
        if not registry.files:
            files.add_row("", "no model files yet: select a pair and press p to download it", "", "")

    def _starts_with(self) -> str | None:
        """With no default_pair set: the pair a start would load (the first installed), which ★ marks."""
        try:
            return host(self).session.select().pair
        except LocalspecError:
            return None

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
            sel = demo_selection() if name == DEMO else host(self).session.select(pair=name)
        except LocalspecError as exc:
            self.notify(note(f"{exc}  (press p to download it)"), severity="error", markup=False)
            return
        if host(self).session.settings.default_pair is None:
            self._remember_choice(name)  # the first pick becomes the default: no first-run screen next time
        host(self).switch_pair(sel)
        self.dismiss()

    def _remember_choice(self, name: str) -> bool:
        try:
            host(self).set_config("default_pair", name)
        except LocalspecError as exc:
            self.notify(note(exc), severity="error", markup=False)
            return False
        self.first_run = False
        self.set_notice(None)
        return True

    def action_make_default(self) -> None:
        name = self.selected()
        if name is None or not self._remember_choice(name):
            return
        self.notify(f"'{name}' is now the default pair", timeout=3)
        self.action_refresh()

    def action_close(self) -> None:
        if self.pulling:
            self.notify("a download is running: it continues in the background (x cancels it)", timeout=3)
        info = host(self).session.info
        if self.first_run and host(self).session.settings.default_pair is None and info is not None and info.demo:
            self._remember_choice(DEMO)  # leaving the first-run screen with the demo loaded: that is the pick
        self.dismiss()

    async def action_pull(self) -> None:
        name = self.selected()
        if name is None or name == DEMO:
            return
        if self.pulling:
            self.notify(f"already downloading '{self.pulling}'", severity="warning")
            return
        self.pulling = name
        self.outcome = None
        self._cancel = threading.Event()
        self._bars.clear()
        downloads = self.query_one("#downloads")
        await downloads.remove_children()  # the last attempt's status and bars (awaited: the new ones reuse ids)
        await downloads.mount(Label(f"Downloading '{name}' (x cancels)", id="download-status", classes="heading",
                                    markup=False))  # error texts may hold [brackets]
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
            self.query_one("#downloads").mount(Label(line(msg.file), classes="file"), bar)
        bar.update(total=msg.total, progress=msg.done)
        bar.set_class(msg.phase == "verify", "verifying")

    def on_pull_finished(self, msg: PullFinished) -> None:
        self.pulling = None
        self._cancel = None
        self.outcome = "cancelled" if msg.cancelled else msg.error or "ready"
        if msg.error and not msg.cancelled:
            self.failed[msg.name] = msg.error
            status = f"Download of '{msg.name}' failed: {msg.error}  (p retries)"
            self.notify(note(msg.error), severity="error", timeout=8, markup=False)
        else:
            self.failed.pop(msg.name, None)
            if msg.cancelled:
                status = f"Download of '{msg.name}' cancelled; p resumes it"
                self.notify(note(status), severity="warning", markup=False)
            else:
                status = f"'{msg.name}' is downloaded: press Enter or u to use it"
                self.notify(f"pair '{msg.name}' is ready: press u to use it", timeout=4)
        for label in self.query("#download-status").results(Label):
            label.update(line(status))
            label.set_class(bool(msg.error) and not msg.cancelled, "failed")
        self.action_refresh()
