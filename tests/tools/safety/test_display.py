"""What the user approves is what runs: every approval display escapes control characters and bounds its length.

Attacks: terminal escapes that erase the command and draw another (ESC [2K, CR, backspace), BiDi overrides and
zero-width characters that reorder or hide text, 8-bit C1 controls, and a 300 MB diff line. Checked on the terminal
approver's real output and on the TUI approval screen driven with Pilot.
"""
import io
import unicodedata
from pathlib import Path

import pytest

from localspec.tools import ApprovalRequest, Decision, Policy, Toolbox
from localspec.tools.safety.danger import Danger
from localspec.tools.safety.display import approval_lines, bounded_lines, hidden_characters, safe_text
from localspec.tools.safety.terminal_approval import ask_on_terminal
from tests.tui_helpers import settle, wait_for

HIDDEN = ["\x1b", "\r", "\x08", "\x07", "\x00", "\x7f", "\x9b", "\x85", "\u202a", "\u202b", "\u202c", "\u202d",
          "\u202e", "\u2066", "\u2067", "\u2068", "\u2069", "\u200b", "\u200c", "\u200d", "\u200e", "\u200f",
          "\u2060", "\ufeff", "\u2028", "\u2029", "\U000e0041"]
ERASE = "rm -rf ~/important \x1b[2K\r\x1b[1A echo hello"


def raw_hidden(text: str) -> list[str]:
    """Characters in shown text that a terminal would not draw as themselves (newline and tab excepted)."""
    return [repr(c) for c in text if c not in "\n\t" and (c < " " or c == "\x7f" or unicodedata.category(c) in
                                                          ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"))]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def shell_request(tmp_path, command: str) -> ApprovalRequest:
    captured = []
    Toolbox(tmp_path, Policy("ask"), lambda r: captured.append(r) or False).call("run_shell", {"command": command})
    return captured[0]


@pytest.mark.parametrize("ch", HIDDEN)
def test_safe_text_escapes_every_hidden_character(ch):
    shown = safe_text(f"a{ch}b")
    assert raw_hidden(shown) == [] and shown != f"a{ch}b" and shown.startswith("a\\") and shown.endswith("b")
    assert hidden_characters(f"a{ch}b") == 1


def test_safe_text_bounds_length():
    shown = safe_text("x" * 1_000_000, 100)
    assert len(shown) < 200 and "999,900 more characters" in shown


@pytest.mark.parametrize("ch", HIDDEN)
def test_terminal_approver_escapes_the_command(tmp_path, ch):
    command = f"echo safe{ch}; rm -rf x"
    out = io.StringIO()
    if ch == "\x00":  # run_shell refuses a NUL outright, before asking; the display must still be safe
        assert "NUL" in Toolbox(tmp_path, Policy("ask"), lambda r: True).call("run_shell", {"command": command}).error
        request = ApprovalRequest("run_shell", {"command": command}, tmp_path, Danger("low"), f"run: {command}")
    else:
        request = shell_request(tmp_path, command)
    decision = ask_on_terminal(request, Terminal("n\n"), out)
    assert decision is Decision.DENY_ONCE
    text = out.getvalue()
    assert raw_hidden(text) == [], raw_hidden(text)
    assert "rm -rf x" in text and "control or invisible" in text


def test_terminal_approver_erase_attack(tmp_path):
    out = io.StringIO()
    ask_on_terminal(shell_request(tmp_path, ERASE), Terminal("n\n"), out)
    text = out.getvalue()
    assert "\x1b" not in text and "\r" not in text
    assert "$ rm -rf ~/important \\x1b[2K\\r\\x1b[1A echo hello" in text


def test_terminal_approver_via_agent_run(tmp_path):
    """The CLI's approver (commands/agent_run.py) prints through the same function."""
    from localspec.commands.agent_run import terminal_approver

    out = io.StringIO()
    terminal_approver(Terminal("n\n"), out)(shell_request(tmp_path, ERASE))
    assert "\x1b" not in out.getvalue() and "\\x1b[2K\\r" in out.getvalue()


@pytest.fixture(scope="module")
def huge_diff():
    """A 300 MB single-line diff (what write_file of a 300 MB one-line file would show)."""
    return "--- a/big.txt\n+++ b/big.txt\n@@ -0,0 +1 @@\n+" + "A\x1b[2K" * 60_000_000 + "\n"


def big_write_request(tmp_path, diff):
    return ApprovalRequest("write_file", {"path": "big.txt", "content": "A" * 10_000_000}, tmp_path,
                           Danger("medium", ("overwrites existing file big.txt",)), "overwrite big.txt (+1 -0)",
                           diff=diff, patterns=("big.txt",), always="later write_file calls on big.txt")


def test_terminal_approver_bounds_a_huge_diff(tmp_path, huge_diff):
    out = io.StringIO()
    ask_on_terminal(big_write_request(tmp_path, huge_diff), Terminal("n\n"), out)
    text = out.getvalue()
    assert len(text) < 5_000, len(text)
    assert f"{len(huge_diff):,} characters (about 300.0 MB)" in text and "more characters" in text
    assert raw_hidden(text) == []


def test_bounded_lines_counts_what_it_leaves_out():
    lines, note = bounded_lines("\n".join(f"line {i}" for i in range(1000)), max_lines=10)
    assert lines == [f"line {i}" for i in range(10)] and "1,000 line(s); showing 10" in note


def test_every_line_says_what_always_remembers(tmp_path):
    offered = approval_lines(shell_request(tmp_path, "git status"))
    assert any(line.kind == "always" and "remembers `git status` with its known-safe options" in line.text
               for line in offered)
    refused = approval_lines(shell_request(tmp_path, "ls > out.txt"))
    always = [line.text for line in refused if line.kind == "always"]
    assert always == ["allow always: not offered, because the command redirects input or output; "
                      "allowing applies once only"]


def test_terminal_refuses_always_where_not_offered(tmp_path):
    out = io.StringIO()
    request = shell_request(tmp_path, "ls > out.txt")
    assert ask_on_terminal(request, Terminal("a\ny\n"), out) is Decision.ALLOW_ONCE
    assert "'always' is not offered" in out.getvalue() and "[a] always" not in out.getvalue()
    out = io.StringIO()
    assert ask_on_terminal(shell_request(tmp_path, "git status"), Terminal("a\n"), out) is Decision.ALLOW_ALWAYS
    assert "remembers `git status`" in out.getvalue()


# ---- the TUI approval screen ----------------------------------------------------------------------------------------

def _app(request):
    from textual.app import App

    from localspec.tui.screens.approval import ApprovalScreen

    class One(App):
        CSS_PATH = [Path(__import__("localspec.tui", fromlist=["x"]).__file__).parent / "approval.tcss"]

        def on_mount(self) -> None:
            self.push_screen(ApprovalScreen(request), self.answered)

        def answered(self, decision) -> None:
            self.decision = decision

    return One()


def shown_text(screen) -> str:
    from rich.console import Console

    console = Console(width=200, record=True, file=io.StringIO())
    for widget in screen.query("Static"):
        console.print(widget.content if not hasattr(widget, "label") else widget.label)
    return console.export_text()


async def _settle(pilot, screen_type):
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, screen_type) and pilot.app.screen.query("#deny_once"),
                   2, "the approval screen")


@pytest.mark.anyio
async def test_tui_screen_escapes_the_erase_attack(tmp_path):
    from localspec.tui.screens.approval import ApprovalScreen

    request = shell_request(tmp_path, ERASE + "\u202eevil\u200b")
    app = _app(request)
    async with app.run_test(size=(140, 45)) as pilot:
        await _settle(pilot, ApprovalScreen)
        text = shown_text(app.screen)
        assert raw_hidden(text) == []
        assert "rm -rf ~/important \\x1b[2K\\r\\x1b[1A echo hello\\u202eevil\\u200b" in text
        assert "control or invisible" in text
        svg = app.export_screenshot()
        assert "\x1b" not in svg and "\u202e" not in svg
        await pilot.press("n")
    assert app.decision is Decision.DENY_ONCE


@pytest.mark.anyio
async def test_tui_screen_bounds_a_huge_diff(tmp_path, huge_diff):
    from localspec.tui.screens.approval import ApprovalScreen

    app = _app(big_write_request(tmp_path, huge_diff))
    async with app.run_test(size=(140, 45)) as pilot:
        await _settle(pilot, ApprovalScreen)
        text = shown_text(app.screen)
        assert len(text) < 40_000 and "about 300.0 MB" in text and raw_hidden(text) == []
        await pilot.press("a")
    assert app.decision is Decision.ALLOW_ALWAYS


@pytest.mark.anyio
async def test_tui_always_disabled_where_not_offered(tmp_path):
    from textual.widgets import Button

    from localspec.tui.screens.approval import ApprovalScreen

    app = _app(shell_request(tmp_path, "echo hi > out.txt"))
    async with app.run_test(size=(140, 45)) as pilot:
        await _settle(pilot, ApprovalScreen)
        button = app.screen.query_one("#allow_always", Button)
        assert button.disabled and "not offered" in str(button.label)
        assert "redirects input or output" in shown_text(app.screen)
        await pilot.press("a")  # does nothing: "always" would not be remembered
        await settle(pilot)
        assert isinstance(app.screen, ApprovalScreen)
        await pilot.press("y")
    assert app.decision is Decision.ALLOW_ONCE
