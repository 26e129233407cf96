"""A tool call as a collapsible card (Textual widget): name, status, arguments and result."""

from __future__ import annotations

from textual.widgets import Collapsible, Static

from localspec.tools.safety.display import arguments_text, safe_text
from localspec.tui.shown import title

MARKS = {"running": "…", "ok": "✓", "failed": "✗"}


def heading(name: str, status: str, note: str = ""):
    """The card's title: the tool name comes from the model or an MCP server, so it is escaped plain content."""
    return title(f"{MARKS[status]} {name}" + (f" · {note}" if note else ""), 200)


class ToolCard(Collapsible):
    def __init__(self, call_id: str, name: str, arguments: dict) -> None:
        self._result = Static("(running)", classes="result", markup=False)
        # Bounded and escaped (tools/safety/display.py): a write_file call may carry 300 MB, a file name terminal escapes.
        super().__init__(Static(arguments_text(arguments), classes="args", markup=False), self._result,
                         title=heading(name, "running"), collapsed=True, classes="toolcard running")
        self.call_id = call_id
        self.tool_name = name
        self.arguments = arguments
        self.status = "running"
        self.result = ""

    def finish(self, ok: bool, content: str, error: str | None) -> None:
        self.status = "ok" if ok else "failed"
        self.result = content if ok else (error or "failed") + (f"\n{content}" if content else "")
        self.remove_class("running")
        self.add_class(self.status)
        # The error names the tool first ("write_file: denied by the user"); the title already does.
        note = "" if ok else (error or "failed").split(": ", 1)[-1][:60]
        self.title = heading(self.tool_name, self.status, note)
        self._result.update(safe_text(self.result, 64 * 1024, newlines=True) or "(no output)")
