"""The tools screen (Textual): MCP servers with their state and tools, and every tool the agent can use.

Space (or Enter) switches the selected server off for this session (the server is stopped and its tools leave
the model's list) or on again (restarted); mcp.json is not changed. Starting can take a while (`npx -y` may
download the server), so it runs in a worker thread; the tables refresh twice a second while the screen is open.
"""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Label, Static

from localspec.tui.shown import line, note

_STATE_STYLE = {"running": "green", "starting": "yellow", "failed": "red", "off": "dim", "stopped": "dim"}
_NO_SERVERS = ("No MCP servers are configured. Add them to {path} in the usual format, for example:\n"
               '{{"mcpServers": {{"files": {{"command": "npx", "args": '
               '["-y", "@modelcontextprotocol/server-filesystem", "/path/to/folder"]}}}}}}\n'
               "then start the app again (or give --mcp-config FILE).")


class ToolsScreen(Screen):
    DEFAULT_CSS = """
    #tools-notice { color: $text-muted; padding: 0 1 1 1; }
    #tools-body { padding: 0 1; }
    #tools-body DataTable { height: auto; max-height: 14; }
    #tools-body .heading { text-style: bold; margin: 1 0 0 0; }
    """
    BINDINGS = [
        Binding("escape", "close", "Back"),
        Binding("space", "toggle_server", "Server on/off"),
        Binding("r", "refresh", "Refresh"),
    ]

    def __init__(self, mcp, toolbox, config_path=None) -> None:
        """mcp: the session's McpTools (None: no servers configured); toolbox: the session's Toolbox."""
        super().__init__(id="tools")
        self.mcp = mcp
        self.toolbox = toolbox
        self.config_path = config_path
        self.busy: set[str] = set()  # servers being switched on or off

    def compose(self) -> ComposeResult:
        yield Static("", id="tools-notice")
        with VerticalScroll(id="tools-body"):
            yield Label("MCP servers  (space: switch off / on for this session)", classes="heading")
            yield DataTable(id="servers", cursor_type="row", zebra_stripes=True)
            yield Label("Tools the model can use", classes="heading")
            yield DataTable(id="tool-list", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#servers", DataTable).add_columns("server", "state", "tools", "where", "detail")
        self.query_one("#tool-list", DataTable).add_columns("tool", "source", "access", "description")
        notice = self.query_one("#tools-notice", Static)
        if self.mcp is None:
            notice.update(Text(_NO_SERVERS.format(path=line(self.config_path or "mcp.json"))))
        else:
            notice.update(line(f"Servers from {self.mcp.config.path}; their output goes to the log folder."))
        self.action_refresh()
        self.set_interval(0.5, self.action_refresh)
        self.query_one("#servers", DataTable).focus()

    # -- tables ---------------------------------------------------------------------------------------------------
    def action_refresh(self) -> None:
        servers = self.query_one("#servers", DataTable)
        keep = servers.cursor_row
        servers.clear()
        for s in self.mcp.servers() if self.mcp is not None else []:
            state = "switching…" if s.name in self.busy else s.state
            detail = s.error or ("; ".join(s.skipped) if s.skipped else "")
            # A server's error is its own stderr, its command line comes from mcp.json: escaped, never markup.
            servers.add_row(line(s.name), Text(state, style=_STATE_STYLE.get(state, "")), str(len(s.tools)),
                            line(_cut(s.where, 40)), line(_cut(detail, 120)), key=s.name)
        if keep and keep < servers.row_count:
            servers.move_cursor(row=keep)
        tools = self.query_one("#tool-list", DataTable)
        tools.clear()
        for t in self.toolbox.tool_defs():
            access = "read" if t.kind == "read" else "write"
            tools.add_row(line(t.name), line(t.source), access, line(_cut(t.description, 90)))

    def selected(self) -> str | None:
        table = self.query_one("#servers", DataTable)
        if table.row_count == 0:
            return None
        return table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value

    # -- actions --------------------------------------------------------------------------------------------------
    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table.id == "servers":
            self.action_toggle_server()

    def action_toggle_server(self) -> None:
        name = self.selected()
        if self.mcp is None or name is None or name in self.busy:
            return
        status = next((s for s in self.mcp.servers() if s.name == name), None)
        if status is None:
            return
        on = status.state in ("off", "stopped", "failed")
        self.busy.add(name)
        self.action_refresh()
        self._switch(name, on)

    @work(thread=True, group="mcp-switch")
    def _switch(self, name: str, on: bool) -> None:
        try:
            self.mcp.set_enabled(name, on)
        except Exception as exc:  # a server that cannot start is a state, shown in the table; this is a bug guard
            self.app.notify(note(f"MCP server {name!r}: {type(exc).__name__}: {exc}"), severity="error", markup=False)
        else:
            status = next((s for s in self.mcp.servers() if s.name == name), None)
            if status is not None and status.state == "running":
                self.app.notify(f"MCP server {name!r} is on ({len(status.tools)} tools)", timeout=3, markup=False)
            elif not on:
                self.app.notify(f"MCP server {name!r} is off for this session", timeout=3, markup=False)
        finally:
            self.busy.discard(name)

    def action_close(self) -> None:
        self.app.pop_screen()


def _cut(text: str, n: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"
