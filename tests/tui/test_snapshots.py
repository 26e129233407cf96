"""Snapshots (pytest-textual-snapshot) of the main screens at a fixed terminal size.

Deterministic by construction: the conversation and the statistics are fixed values put into the real widgets
(no timings, no model output), notifications are cleared and the cursor does not blink. Regenerate after a
deliberate UI change with `pytest tests/tui/test_snapshots.py --snapshot-update` and review the SVGs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from localspec.launch.flags import RunFlags
from localspec.tools import ApprovalRequest
from localspec.tools.safety.danger import Danger
from localspec.tui.app import LocalspecApp
from localspec.tui.launch_options import AppOptions
from localspec.tui.livestats import SessionView, StatsView
from localspec.tui.screens.approval import ApprovalScreen
from localspec.tui.screens.models import ModelsScreen
from localspec.tui.screens.settings import SettingsScreen
from localspec.tui.widgets.stats_panel import StatsPanel
from localspec.tui.widgets.toolcard import ToolCard
from tests.hub_server import catalog_toml
from tests.tui_helpers import settle as settle_app
from tests.tui_helpers import wait_for

pytestmark = pytest.mark.slow  # the app driven end to end (Pilot, real llama.cpp)

SIZE = (130, 38)

STATS = StatsView(generated=212, drafted=260, accepted=171, target_passes=89, acceptance_rate=171 / 260,
                  mean_accepted_length=212 / 89, tokens_per_second=41.7, estimated_speedup=1.92,
                  drafters={"model": (180, 104), "schema": (64, 62), "ngram": (16, 5)}, finish_reason="stop")
RATES = [22.0, 30.5, 41.0, 38.2, 44.9, 52.3, 47.1, 39.8, 61.2, 58.0, 43.5, 40.1]
TOTALS = SessionView(turns=3, generated=540, drafted=700, accepted=452, target_passes=231, generation_s=14.2)
REPLY = """The project reads its settings from `config.toml`:

- **default_pair**: the model pair used at start
- **drafters**: which drafters may propose tokens

Run `localspec pull qwen3-1.7b` to download the default pair."""
# The same reply split into runs by origin, as the engine reports them.
REPLY_RUNS = [("target", "The project"), ("model", " reads its settings from "), ("ngram", "`config.toml`"),
              ("target", ":\n\n- **default"), ("history", "_pair**: the model pair"), ("model", " used at start\n"),
              ("target", "- **drafters**: which"), ("model", " drafters may propose tokens\n\nRun `localspec pull "),
              ("schema", "qwen3-1.7b"), ("model", "` to download the default pair.")]
CALL_RUNS = [("target", '{"name": "'), ("schema", 'read_file", "arguments": {"path": "'), ("model", "config"),
             ("ngram", '.toml"'), ("schema", "}}")]


@pytest.fixture
def snap_env(home, tmp_path, monkeypatch, chat_pair):
    from tests.hub_server import DRAFT_FILE, DRAFT_REPO, TARGET_FILE, TARGET_REPO

    target, draft = (p.read_bytes() for p in chat_pair)
    cat = tmp_path / "models.toml"
    cat.write_text(catalog_toml({"small": ((TARGET_REPO, TARGET_FILE, target), (DRAFT_REPO, DRAFT_FILE, draft)),
                                 "larger": ((TARGET_REPO, "bigger-target.gguf", target * 3),
                                            (DRAFT_REPO, DRAFT_FILE, draft))}, "small"))
    monkeypatch.setenv("LOCALSPEC_CATALOG", str(cat))
    # The screens show folders under the home folder as ~/...: a home in this test's own tmp_path keeps the pictures
    # the same from run to run (the header shows the workspace, help the data folders, settings the config file).
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "config.toml").write_text('approval = "ask"\n[sampling]\ntemperature = 0.2\nseed = 7\n')
    monkeypatch.setenv("LOCALSPEC_HOME", str(tmp_path / "home"))
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def make_app(chat_pair, workspace) -> LocalspecApp:
    return LocalspecApp(AppOptions(flags=RunFlags(target=str(chat_pair[0]), draft=str(chat_pair[1]), max_tokens=8,
                                                  ctx_size=8192),
                                   workspace=workspace, config_path=workspace.parent / "config.toml", record=False))


async def settle(pilot) -> None:
    app = pilot.app
    await wait_for(pilot, lambda: app.chat.status == "ready" and app.session.loaded, what="the pair")
    await app.workers.wait_for_complete()  # loading finished and posted everything it will post
    await settle_app(pilot)
    app.chat.query_one("#prompt").cursor_blink = False
    app.clear_notifications()
    await settle_app(pilot)


async def fill_chat(pilot, origins: bool = False) -> None:
    chat = pilot.app.chat
    await chat.add_message("user", "Where does localspec keep its settings?")
    call = await chat.add_message("call")
    await call.append(CALL_RUNS)
    card = ToolCard("call1", "read_file", {"path": "config.toml"})
    await chat.query_one("#log").mount(card)
    card.finish(True, 'default_pair = "qwen3-1.7b"\n[drafters]\nngram = true', None)
    reply = await chat.add_message("assistant")
    await reply.append(REPLY_RUNS)
    await reply.finish()
    chat.show_stats(STATS, RATES)
    chat.query_one(StatsPanel).show_totals(TOTALS)
    chat.origins = origins
    await settle(pilot)


def test_chat_screen(snap_compare, snap_env, chat_pair):
    assert snap_compare(make_app(chat_pair, snap_env), terminal_size=SIZE, run_before=fill_chat)


def test_chat_screen_token_origins(snap_compare, snap_env, chat_pair):
    async def run_before(pilot):
        await fill_chat(pilot, origins=True)

    assert snap_compare(make_app(chat_pair, snap_env), terminal_size=SIZE, run_before=run_before)


def test_chat_screen_narrow(snap_compare, snap_env, chat_pair):
    """80x24: the panel folds into one line, the footer keeps F1, F2, F3 and Ctrl+Q, the header still fits."""
    assert snap_compare(make_app(chat_pair, snap_env), terminal_size=(80, 24), run_before=fill_chat)


def test_help_screen(snap_compare, snap_env, chat_pair):
    from localspec.tui.screens.help import HelpScreen

    async def run_before(pilot):
        await settle(pilot)
        await pilot.press("f1")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, HelpScreen), 5, "the help screen")
        await settle_app(pilot)

    assert snap_compare(make_app(chat_pair, snap_env), terminal_size=SIZE, run_before=run_before)


def test_approval_modal(snap_compare, snap_env, chat_pair):
    request = ApprovalRequest(
        tool="edit_file", arguments={"path": "src/app.py", "old": "DEBUG = True", "new": "DEBUG = False"},
        cwd=Path("/home/user/project"), danger=Danger("medium", ("changes an existing file",)),
        summary="edit src/app.py (+1 -1)",
        diff="--- a/src/app.py\n+++ b/src/app.py\n@@ -1,3 +1,3 @@\n import os\n-DEBUG = True\n+DEBUG = False\n"
             " PORT = 8080\n",
        patterns=("src/app.py",), always="later edit_file calls on src/app.py")

    async def run_before(pilot):
        await settle(pilot)
        pilot.app.push_screen(ApprovalScreen(request))
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, ApprovalScreen), 5, "the modal")

    assert snap_compare(make_app(chat_pair, snap_env), terminal_size=SIZE, run_before=run_before)


def test_models_screen(snap_compare, snap_env, chat_pair):
    async def run_before(pilot):
        await settle(pilot)
        pilot.app.action_models()
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, ModelsScreen), 5, "the models screen")

    assert snap_compare(make_app(chat_pair, snap_env), terminal_size=SIZE, run_before=run_before)


def test_settings_screen(snap_compare, snap_env, chat_pair):
    async def run_before(pilot):
        await settle(pilot)
        pilot.app.action_settings()
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, SettingsScreen), 5, "the settings screen")
        for w in pilot.app.screen.query("Input"):
            w.cursor_blink = False

    assert snap_compare(make_app(chat_pair, snap_env), terminal_size=SIZE, run_before=run_before)
