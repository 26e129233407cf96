"""The first hour in the app (Pilot, real files): the first-run screen with the packaged demo model, picking a
model so the first-run screen does not return, the demo as a default pair, and a failed download that stays
visible with its reason and a retry."""

from __future__ import annotations

import socket

import pytest

from localspec.launch.flags import RunFlags
from localspec.models.selection import DEMO, demo_model_path
from localspec.settings.config_toml import load_config
from localspec.tui.app import LocalspecApp
from localspec.tui.launch_options import AppOptions
from localspec.tui.screens.models import ModelsScreen
from tests.tui_helpers import SIZE, plain, wait_for

pytestmark = [pytest.mark.slow,  # the app driven end to end (Pilot, real llama.cpp)
              pytest.mark.anyio,
              pytest.mark.skipif(demo_model_path() is None, reason="needs the packaged demo model (localspec[demo])")]


@pytest.fixture
def anyio_backend():
    return "asyncio"


def app_in(tmp_path) -> LocalspecApp:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return LocalspecApp(AppOptions(flags=RunFlags(max_tokens=5), workspace=ws, record=False))


def row_of(screen, name: str) -> list:
    return screen.query_one("#pairs").get_row(name)


async def test_first_run_explains_itself_and_leaving_it_picks_the_demo(home, tmp_path, demo_model):
    app = app_in(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, ModelsScreen), 10, "the first-run screen")
        screen = app.screen
        notice = plain(screen.query_one("#models-notice"))
        assert "No model pair is installed" not in notice
        assert "demo model" in notice and "is installed" in notice
        # Issue 28: what the demo can and cannot do, how to see the agent work with it, and which pair to pull.
        assert "It can:" in notice and "It cannot:" in notice and "choose a tool by itself" in notice
        assert "/tool list_dir" in notice and "download qwen3-1.7b" in notice and "p, then Enter" in notice
        legend = plain(screen.query_one("#models-legend"))
        assert "●" in legend and "★" in legend and "in use" in legend and "default" in legend
        await wait_for(pilot, lambda: app.session.loaded, 60, "the demo model")
        screen.action_refresh()
        assert row_of(screen, DEMO)[2] == "installed" and row_of(screen, DEMO)[0].startswith("●")
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.chat, 5, "the chat")
    assert load_config().default_pair == DEMO  # the pick is remembered...

    app = app_in(tmp_path)
    async with app.run_test(size=SIZE) as pilot:  # ...so the next start goes straight to the chat
        await wait_for(pilot, lambda: app.session.loaded and app.chat.status == "ready", 60, "the demo model")
        assert app.screen is app.chat and app.session.info.demo
        assert "demo" in plain(app.chat.query_one("#topbar"))


async def test_s_sets_the_demo_as_default_and_use_remembers_the_pick(tiny_hub, tmp_path, demo_model):
    from localspec.models.install import pull_pair

    pull_pair("tiny")
    app = app_in(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.session.loaded, 30, "the installed pair")
        assert app.session.info.pair == "tiny" and app.screen is app.chat  # a pair is installed: no first run
        await pilot.press("f2")
        await wait_for(pilot, lambda: isinstance(app.screen, ModelsScreen), 5, "the models screen")
        screen = app.screen
        table = screen.query_one("#pairs")
        keys = [r.value for r in table.rows]
        table.move_cursor(row=keys.index(DEMO))
        await pilot.press("s")
        assert load_config().default_pair == DEMO
        assert row_of(screen, DEMO)[0].endswith("★") and not row_of(screen, "tiny")[0].endswith("★")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.session.loaded and app.session.info.demo, 60, "the demo model")


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens once the socket closes


async def test_a_failed_download_stays_visible_with_its_reason_and_a_retry(tiny_hub, tmp_path,
                                                                           monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed_port()}")  # offline: nothing answers
    app = app_in(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, ModelsScreen), 10, "the models screen")
        screen = app.screen
        table = screen.query_one("#pairs")
        table.move_cursor(row=[r.value for r in table.rows].index("tiny"))
        await pilot.press("p")
        await wait_for(pilot, lambda: screen.outcome is not None, 60, "the download to fail")
        status = plain(screen.query_one("#download-status"))
        assert "failed" in status and "cannot reach" in status and "p retries" in status
        assert "Downloading" not in status
        assert row_of(screen, "tiny")[2] == "failed (p retries)"

        await pilot.press("escape")  # leave and come back: still there
        await wait_for(pilot, lambda: app.screen is app.chat, 5, "the chat")
        await pilot.press("f2")
        await wait_for(pilot, lambda: app.screen is screen, 5, "the models screen again")
        assert "failed" in plain(screen.query_one("#download-status"))
        assert row_of(screen, "tiny")[2] == "failed (p retries)"

        monkeypatch.setenv("HF_ENDPOINT", tiny_hub.url)  # back online: p retries and succeeds
        await pilot.press("p")
        await wait_for(pilot, lambda: screen.outcome == "ready", 60, "the retried download")
        assert row_of(screen, "tiny")[2] == "installed"
        assert "press Enter or u" in plain(screen.query_one("#download-status"))
