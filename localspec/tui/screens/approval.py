"""The approval modal (Textual): what a tool wants to do, how dangerous it is, and the user's four answers.

Dismissed with a Decision; Escape (or closing it any other way) means "deny once", so no answer is a denial.
Everything shown comes from tools/display.approval_lines (escaped and bounded, the same lines the terminal
approver prints) and is drawn as plain Text, never parsed as markup. Where "always" is not offered, its button
is disabled and says why, and the "a" key does nothing.
"""

from __future__ import annotations

from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Static

from localspec.tools import ApprovalRequest, Decision
from localspec.tools.safety.display import approval_lines

DANGER_STYLE = {"low": "bold green", "medium": "bold yellow", "high": "bold red"}


class ApprovalScreen(ModalScreen[Decision]):
    BINDINGS = [
        Binding("y", "decide('allow_once')", "Allow once"),
        Binding("a", "decide('allow_always')", "Allow always"),
        Binding("n,escape", "decide('deny_once')", "Deny once"),
        Binding("d", "decide('deny_always')", "Deny always"),
    ]

    def __init__(self, request: ApprovalRequest) -> None:
        super().__init__(classes="approval")
        self.request = request
        self.lines = approval_lines(request)

    def _text(self, kind: str) -> Text:
        return Text("\n".join(line.text for line in self.lines if line.kind == kind))

    def compose(self) -> ComposeResult:
        r = self.request
        level = r.danger.level
        danger_line = self._text("danger").plain
        danger = Text.assemble(("danger: ", "dim"), (level.upper(), DANGER_STYLE.get(level, "bold")),
                               danger_line[len(f"danger: {level}"):])
        with Vertical(id="dialog"):
            yield Static(self._text("title"), id="approval-title")
            if any(line.kind == "command" for line in self.lines):
                yield Static(self._text("command"), id="summary")
            for line in self.lines:
                if line.kind == "warning":
                    yield Static(Text(line.text), classes="approval-warning")
            yield Static(danger, id="danger", classes=f"danger-{level}")
            yield Static(Text.assemble(self._text("cwd")), id="cwd")
            yield Static(self._text("always"), id="always", classes="offered" if r.always else "not-offered")
            if any(line.kind == "never" for line in self.lines):
                yield Static(self._text("never"), id="never")
            with VerticalScroll(id="details"):
                yield Static(Syntax(self._text("arguments").plain, "json", word_wrap=True, theme="ansi_dark"),
                             id="arguments")
                if r.diff:
                    yield Static(Syntax(self._text("diff").plain, "diff", word_wrap=True, theme="ansi_dark"),
                                 id="diff")
                    if any(line.kind == "note" for line in self.lines):
                        yield Static(self._text("note"), id="diff-note")
            with Horizontal(id="buttons"):
                yield Button("Allow once (y)", id="allow_once", variant="success")
                yield Button("Allow always (a)" if r.always else "Always: not offered", id="allow_always",
                             variant="primary", disabled=not r.always)
                yield Button("Deny once (n)", id="deny_once", variant="warning")
                yield Button("Deny always (d)", id="deny_always", variant="error")
        yield Footer()

    def on_mount(self) -> None:
        # Focus a denial: an Enter pressed while typing elsewhere must not approve anything.
        self.query_one("#deny_once", Button).focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "decide" and parameters and parameters[0] == "allow_always" and not self.request.always:
            return None  # shown disabled in the footer; "always" would not be remembered here
        return True

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_decide(event.button.id or "deny_once")

    def action_decide(self, decision: str) -> None:
        if decision == "allow_always" and not self.request.always:
            return
        self.dismiss(Decision(decision))
