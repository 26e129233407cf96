"""The app at 80 columns as a new user saw it (issue 39.8): nothing the user needs is cut or covered. The export
dialog's keys, the top bar's status while a reply is written, the one-line statistics and their warning, and the
prompt under a notification."""

from __future__ import annotations

import pytest
from textual.widgets._toast import Toast

from localspec.tui.livestats import StatsView
from localspec.tui.screens.export import ExportScreen
from localspec.tui.widgets.prompt_input import PromptInput
from tests.hub_server import home  # noqa: F401  (fixture)
from tests.tui_helpers import GREEDY, make_app, ready, screen_text, send, settle, wait_for, write_config

pytestmark = pytest.mark.anyio

NARROW = (80, 24)
LONG = "please tell me everything about the weather in the mountains this weekend"


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def test_the_top_bar_keeps_the_status_whole_while_a_reply_is_written(chat_pair, workspace, home):  # noqa: F811
    write_config(home, GREEDY)
    app = make_app(chat_pair, workspace, max_tokens=4000)
    async with app.run_test(size=NARROW) as pilot:
        await ready(pilot)
        await send(pilot, LONG)
        await wait_for(pilot, lambda: app.chat.status.startswith("generating"), 30, "the reply")
        await settle(pilot)
        top = screen_text(app).splitlines()[0]
        assert "generating…" in top and "approval ask" in top, top  # the title gives way, with its "…"
        assert "please tell" in top and "…" in top and "(Es" not in top, top
        app.chat.action_cancel()
        await wait_for(pilot, lambda: not app.chat.busy, 10, "the cancelled reply")


async def test_the_one_line_statistics_keep_their_warning(chat_pair, workspace, home):  # noqa: F811
    write_config(home, GREEDY)
    app = make_app(chat_pair, workspace)
    async with app.run_test(size=NARROW) as pilot:
        await ready(pilot)
        slow = StatsView(generated=200, drafted=100, accepted=20, target_passes=180, acceptance_rate=0.2,
                         mean_accepted_length=200 / 180, tokens_per_second=12.5, estimated_speedup=0.7,
                         drafters={"model": (100, 20), "ngram": (10, 1)},
                         switched_off={"ngram": "it missed 9 of 10 times"})
        app.chat.show_stats(slow)
        await settle(pilot)
        line = next(text for text in screen_text(app).splitlines() if " tok" in text)
        assert "slower" in line and "off: ngram" in line and "tok/pass" in line and line.endswith("^t"), line


async def test_the_export_dialog_says_its_keys_at_80_columns(chat_pair, workspace, home):  # noqa: F811
    write_config(home, GREEDY)
    app = make_app(chat_pair, workspace, max_tokens=4)
    async with app.run_test(size=NARROW) as pilot:
        await ready(pilot)
        await send(pilot, LONG)
        await wait_for(pilot, lambda: not app.chat.busy, 30, "the reply")
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: isinstance(app.screen, ExportScreen), 5, "the export dialog")
        await settle(pilot)
        assert "Esc cancels" in screen_text(app)


async def test_a_notification_leaves_the_prompt_in_sight(chat_pair, workspace, home):  # noqa: F811
    write_config(home, GREEDY)
    app = make_app(chat_pair, workspace)
    async with app.run_test(size=NARROW, notifications=True) as pilot:
        await ready(pilot)  # "loaded t.gguf + d.gguf" is up now
        await wait_for(pilot, lambda: app.screen.query(Toast), 5, "the loaded notice")
        await settle(pilot)
        prompt = app.chat.query_one(PromptInput).region
        toasts = [t.region for t in app.screen.query(Toast)]
        assert toasts and not any(t.overlaps(prompt) for t in toasts), (toasts, prompt)


async def test_the_top_bar_cuts_a_long_pair_before_the_status():
    """--target and --draft file names fill 80 columns alone: the pair is cut with "…", the status stays whole and
    apart from the workspace."""
    from pathlib import Path

    from textual.app import App

    from localspec.tui.widgets.top_bar import TopBar

    class Bar(App):
        CSS = "#header {height: 1;} #topbar {width: 1fr; text-wrap: nowrap; text-overflow: ellipsis;} #where {width: auto;}"

        def compose(self):
            yield TopBar(id="header")

    pair = "smollm2-135m-instruct-f16.gguf + SmolLM2-135M-Instruct.Q4_1.gguf"
    for size, narrow in (((80, 24), True), ((120, 35), False)):
        app = Bar()
        async with app.run_test(size=size) as pilot:
            bar = app.query_one(TopBar)
            bar.show(narrow=narrow, pair=pair, status="generating… (Esc cancels)", title="Write a poem about the sea.")
            bar.show_where(Path("/tmp/newcomer/ws"), "on", "ask")
            await pilot.pause()
            top = screen_text(app).splitlines()[0]
            assert "generating…" in top and "smollm2-135m" in top and "…" in top, top
            assert "approval ask" in top and "… · tools" not in top and "…ws" not in top, top
