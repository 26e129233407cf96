"""Whatever the model writes, the user sees it (issue 39.1): each reply of a corpus of awkward ones (odd lists, stray
markup, control characters, unclosed code fences, half a table) is on the screen in full, streamed as a live reply
and drawn back from a saved conversation, at 120 and at 80 columns."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from textual.app import App

from localspec.terminal import display_text
from localspec.tui.widgets.message import ChatMessage
from tests.tui.awkward_replies import AWKWARD_REPLIES
from tests.tui_helpers import screen_text, settle, wait_for

pytestmark = pytest.mark.anyio

CSS = [Path(__file__).resolve().parents[2] / "localspec" / "tui" / f"{name}.tcss" for name in ("app", "chat")]
WORD = re.compile(r"[^\W_]+")


@pytest.fixture
def anyio_backend():
    return "asyncio"


class Harness(App):
    """The chat's message widget with the app's own styles, one reply at a time."""

    CSS_PATH = CSS


def words_to_see(reply: str) -> list[str]:
    """Every word of the reply as the app shows it (controls escaped), but where a link points and a code fence's
    language: Markdown shows neither, and plain text shows both."""
    text = re.sub(r"\]\([^)]*\)", "]", display_text(reply))
    text = re.sub(r"^(\s*(?:`{3,}|~{3,}))[^`~\n]*$", r"\1", text, flags=re.M)
    return WORD.findall(text)


def missing(app, reply: str) -> list[str]:
    shown = set(WORD.findall(screen_text(app)))
    return [w for w in words_to_see(reply) if w not in shown]


async def show(pilot, reply: str, streamed: bool) -> ChatMessage:
    app = pilot.app
    await app.screen.remove_children()
    if streamed:  # as a live reply: a few characters at a time, then the end
        message = ChatMessage("assistant")
        await app.screen.mount(message)
        for i in range(0, len(reply), 7):
            await message.append([("target", reply[i:i + 7])])
        await message.finish()
    else:  # as a saved conversation is drawn back
        message = ChatMessage("assistant", reply)
        await app.screen.mount(message)
    await settle(pilot)
    return message


def test_the_corpus_is_large_enough():
    assert len(AWKWARD_REPLIES) >= 30 and len(set(AWKWARD_REPLIES)) == len(AWKWARD_REPLIES)


@pytest.mark.parametrize("width", [120, 80])
@pytest.mark.parametrize("streamed", [False, True], ids=["saved", "streamed"])
async def test_every_awkward_reply_is_shown_in_full(width, streamed):
    async with Harness().run_test(size=(width, 60)) as pilot:
        lost = {}
        for reply in AWKWARD_REPLIES:
            await show(pilot, reply, streamed)
            try:
                await wait_for(pilot, lambda r=reply: not missing(pilot.app, r), 2, "the whole reply")
            except AssertionError:
                lost[reply] = missing(pilot.app, reply)
        assert not lost, lost


async def test_a_reply_markdown_shows_whole_stays_markdown():
    """The fallback is for what Markdown cannot show: an ordinary reply keeps its formatting."""
    from textual.widgets import Markdown

    async with Harness().run_test(size=(100, 40)) as pilot:
        message = await show(pilot, "Three animals:\n\n1. **Dog**\n2. Cat\n3. Bird\n\n| a | b |\n|---|---|\n| 1 | 2 |",
                              streamed=True)
        assert message.query_one(Markdown).display and not missing(pilot.app, "Dog Cat Bird a b 1 2")
        assert "**" not in screen_text(pilot.app)  # rendered, not shown as source
