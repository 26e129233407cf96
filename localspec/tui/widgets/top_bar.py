"""The chat screen's top line: the conversation's title, the pair and what the app is doing on the left; the
workspace folder, tools on or off and the approval mode on the right. Narrow (below the screen's WIDE_COLUMNS) it
says less, so that all of it fits in 80 columns."""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Static

from localspec.tui.shown import line

TITLE_CHARS = 48  # a longer title ends in "…"
NARROW_TITLE_CHARS = 24
FOLDER_CHARS = 32  # a deeper workspace path keeps its end ("…/project/ws"): the title needs the room more


def short_path(path: Path) -> str:
    """A folder as the header shows it: under the home folder as ~/..."""
    try:
        return "~/" + str(path.relative_to(Path.home())) if path != Path.home() else "~"
    except ValueError:
        return str(path)


class TopBar(Horizontal):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.status = "starting"  # what the app is doing: "loading …", "ready", "generating…", "no model"
        self.title = ""  # the conversation's title
        self.pair = "no model"
        self.narrow = False
        self._where = ""

    def compose(self) -> ComposeResult:
        yield Static("", id="topbar")
        yield Static("", id="where")

    def show(self, *, status: str | None = None, title: str | None = None, pair: str | None = None,
             narrow: bool | None = None) -> None:
        """The left part, with what changed."""
        if status is not None:
            self.status = status
        if title is not None:
            self.title = title
        if pair is not None:
            self.pair = pair
        if narrow is not None:
            self.narrow = narrow
        status = self.status
        if self.narrow:  # the footer's "esc Stop" says it: the status keeps its room
            status = status.removesuffix(" (Esc cancels)")
        pair = self.pair
        limit = NARROW_TITLE_CHARS if self.narrow else TITLE_CHARS
        if self.size.width:  # the title gives way first, then the pair's file names: what the app is doing stays whole
            room = self.size.width - len(self._where) - 1
            pair_room = room - len(f" localspec ·  · {status}")
            if len(pair) > pair_room:  # two --target/--draft file names fill 80 columns alone
                pair = pair[:pair_room - 1].rstrip() + "…" if pair_room >= 4 else ""
        rest = f" · {pair} · {status}" if pair else f" · {status}"
        if self.size.width:
            limit = min(limit, room - len(rest) - 1)  # head starts with a space
        shown = self.title
        if len(shown) > limit:  # cut with "…", or left out where not even a few characters fit
            shown = shown[:limit - 1].rstrip() + "…" if limit >= 4 else ""
        head = f" {shown}" if shown else " localspec"
        for bar in self.query("#topbar").results(Static):  # none before the bar is composed
            bar.update(line(head + rest))  # the title is the user's text, the pair file names

    def on_resize(self) -> None:
        self.show()

    def show_where(self, workspace: Path, tools: str, approval: str) -> None:
        """The right part: `tools` is "on", "off" or "next: NAME"."""
        folder = workspace.name if self.narrow else short_path(workspace)
        if len(folder) > FOLDER_CHARS:
            folder = "…" + folder[-(FOLDER_CHARS - 1):]
        key = "" if self.narrow else " (F6)"
        self._where = f"{folder} · tools {tools}{key} · approval {approval} "
        for bar in self.query("#where").results(Static):
            bar.update(line(self._where))  # a folder can hold markup
        self.show()
