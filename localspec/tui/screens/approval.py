"""The approval modal (Textual): what a tool wants to do, how dangerous it is, and the user's four answers.

Dismissed with a Decision; Escape (or closing it any other way) means "deny once", so no answer is a denial.
"""

from __future__ import annotations

from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Label, Static

from localspec.tools import ApprovalRequest, Decision
from localspec.tui.transcript import arguments_json

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

    def compose(self) -> ComposeResult:
        r = self.request
        danger = Text.assemble(("danger: ", "dim"), (r.danger.level.upper(), DANGER_STYLE.get(r.danger.level, "bold")))
        if r.danger.reasons:
            danger.append(" · " + "; ".join(r.danger.reasons))
        with Vertical(id="dialog"):
            yield Label(f"Allow {r.tool}?", id="approval-title")
            yield Static(Text(r.summary), id="summary")
            yield Static(danger, id="danger", classes=f"danger-{r.danger.level}")
            yield Static(Text.assemble(("in ", "dim"), str(r.cwd)), id="cwd")
            with VerticalScroll(id="details"):
                yield Static(Syntax(arguments_json(r.arguments), "json", word_wrap=True, theme="ansi_dark"),
                             id="arguments")
                if r.diff:
                    yield Static(Syntax(r.diff, "diff", word_wrap=True, theme="ansi_dark"), id="diff")
            with Horizontal(id="buttons"):
                yield Button("Allow once (y)", id="allow_once", variant="success")
                yield Button("Allow always (a)", id="allow_always", variant="primary")
                yield Button("Deny once (n)", id="deny_once", variant="warning")
                yield Button("Deny always (d)", id="deny_always", variant="error")
        yield Footer()

    def on_mount(self) -> None:
        # Focus a denial: an Enter pressed while typing elsewhere must not approve anything.
        self.query_one("#deny_once", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_decide(event.button.id or "deny_once")

    def action_decide(self, decision: str) -> None:
        self.dismiss(Decision(decision))
