"""The Textual app driven with Pilot on real tiny GGUF models: streaming and stats, cancel, tool approvals,
switching pairs, the models screen (first run, downloads), settings, clipboard, transcript and the palette.

The tiny models never emit EOS, so every app here caps max_tokens. Generation runs on real llama.cpp in the app's
worker thread; the tests wait on the UI state the user would see.
"""

from __future__ import annotations

import os
import threading

import pytest

from localspec.launch.flags import RunFlags
from localspec.tui.app import LocalspecApp
from localspec.tui.launch_options import AppOptions
from localspec.tui.screens.approval import ApprovalScreen
from localspec.tui.screens.models import ModelsScreen
from localspec.tui.screens.settings import SettingsScreen
from localspec.tui.widgets.stats_panel import StatsPanel
from localspec.tui.widgets.toolcard import ToolCard
from tests.hub_server import catalog_toml
from tests.tui_helpers import (
    GREEDY,
    MODEL_ONLY,
    SIZE,
    StallMonitor,
    assert_no_stall,
    idle_baseline,
    make_app,
    messages,
    plain,
    ready,
    send,
    wait_for,
    while_busy,
    write_config,
)

pytestmark = pytest.mark.anyio


@pytest.mark.slow  # the app driven end to end (Pilot, real llama.cpp)
async def test_prompt_streams_text_and_live_stats_without_blocking_the_ui(paying_pair, workspace, home,
                                                                           record_property):
    write_config(home, MODEL_ONLY)
    app = make_app(paying_pair, workspace, max_tokens=240)  # a draft that pays: the never-slower pricing lets it in
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        idle = await idle_baseline(pilot)  # the same timer with nothing to do: how late this machine makes it anyway
        monitor = StallMonitor(app)
        monitor.start()
        await send(pilot, "hello there")
        seen_lengths, live_stats = set(), []

        def watch() -> None:
            replies = messages(app, "assistant")
            if replies:
                seen_lengths.add(len(replies[-1].text))
            panel = app.chat.query_one(StatsPanel)
            if panel.view is not None and panel.view.finish_reason == "":
                live_stats.append(panel.view.generated)

        await while_busy(pilot, watch)
        monitor.stop()

        reply = messages(app, "assistant")[-1].text
        assert len(reply) > 0
        assert len({n for n in seen_lengths if n}) >= 3, "the reply should appear piece by piece while generated"
        assert len({n for n in live_stats if n < 240}) >= 2, "the panel should update during the generation"
        panel = app.chat.query_one(StatsPanel)
        view = panel.view
        assert view.generated == 240 and view.finish_reason == "length"
        assert view.target_passes < 240 and view.accepted > 0  # the draft model's tokens were accepted
        assert set(view.drafters) == {"model"}
        assert len(panel.rates) >= 3  # sparkline points
        assert app.session.totals.turns == 1 and app.session.totals.generated == 240
        drafter_table = plain(app.chat.query_one("#drafter-stats"))
        assert "draft model" in drafter_table
        assert app.session.history[-1] == {"role": "assistant", "content": reply}

        record_property("ui_longest_stall_ms", round(monitor.worst * 1000, 1))
        record_property("ui_idle_longest_stall_ms", round(idle.worst * 1000, 1))
        print(f"\nUI event loop: longest stall {monitor.worst * 1000:.1f} ms over {monitor.ticks} ticks during a "
              f"240-token generation (idle baseline {idle.worst * 1000:.1f} ms)")
        assert monitor.ticks > 20
        await assert_no_stall(pilot, app, monitor.worst, idle)


@pytest.mark.slow  # the app driven end to end (Pilot, real llama.cpp)
async def test_escape_cancels_mid_generation_and_keeps_the_text(chat_pair, workspace, home):
    write_config(home, GREEDY)
    app = make_app(chat_pair, workspace, max_tokens=4000)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "write a long story")
        await wait_for(pilot, lambda: messages(app, "assistant") and len(messages(app, "assistant")[-1].text) > 20,
                       what="some streamed text")
        app.simulate_key("escape")
        await wait_for(pilot, lambda: not app.chat.busy, 10, "the cancelled turn to end")
        kept = messages(app, "assistant")[-1].text
        assert kept
        panel = app.chat.query_one(StatsPanel)
        assert panel.view.finish_reason == "cancelled" and panel.view.generated < 4000
        assert any("cancelled" in m.text for m in messages(app, "note"))
        assert app.session.history[-1] == {"role": "assistant", "content": kept, "cancelled": True}  # marked (issue 28)
        # The app is usable again: a second prompt streams (and is cancelled in turn).
        await send(pilot, "again")
        await wait_for(pilot, lambda: len(messages(app, "assistant")) == 2 and messages(app, "assistant")[-1].text,
                       what="the second reply")
        app.simulate_key("escape")
        await wait_for(pilot, lambda: not app.chat.busy, 10, "the second cancelled turn")
        assert len([m for m in messages(app, "note") if "cancelled" in m.text]) == 2


async def test_engine_errors_show_as_a_message(chat_pair, workspace, home, tmp_path):
    """A conversation that no longer fits the context is reported in the chat, not as a traceback."""
    write_config(home, GREEDY)
    app = make_app(chat_pair, workspace, ctx_size=1024)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "hi")
        # the error message itself: the turn can end (busy off) a moment before its message is in the log
        await wait_for(pilot, lambda: messages(app, "error") and not app.chat.busy, what="the turn to fail")
        errors = messages(app, "error")
        assert errors and "does not fit" in errors[-1].text


@pytest.mark.slow  # the app driven end to end (Pilot, real llama.cpp)
async def test_a_model_that_fails_to_load_is_reported_in_the_chat(workspace, home, tmp_path):
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\0" * 64)  # right magic, no usable content
    app = LocalspecApp(AppOptions(flags=RunFlags(target=str(broken), max_tokens=5), workspace=workspace))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: messages(app, "error"), 10, "the load error")
        assert "broken.gguf" in messages(app, "error")[0].text
        assert app.chat.status == "no model" and not app.session.loaded


# ---- tool calls and approval ------------------------------------------------------------------------------------

def modal_ready(app) -> bool:
    """The approval modal is up AND composed (its buttons exist): pushing a screen and composing it are two steps."""
    return isinstance(app.screen, ApprovalScreen) and bool(app.screen.query("#deny_once"))


async def answer_approval(pilot, key: str) -> ApprovalScreen:
    app = pilot.app
    await wait_for(pilot, lambda: modal_ready(app), what="the approval modal")
    modal = app.screen
    app.simulate_key(key)
    await wait_for(pilot, lambda: not isinstance(app.screen, ApprovalScreen), 5, "the modal to close")
    return modal


@pytest.mark.slow  # the app driven end to end (Pilot, real llama.cpp)
async def test_tool_call_approve_then_deny_always(chat_pair, workspace, home):
    """The tiny model is made to call run_shell (tool_choice); the modal shows the request; 'y' runs it, 'd' refuses
    it and remembers, so the next identical call is refused without asking."""
    write_config(home, GREEDY)
    app = make_app(chat_pair, workspace, tool_choice="run_shell", max_tokens=30)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "list the files")
        await wait_for(pilot, lambda: modal_ready(app), what="the approval modal")
        request = app.screen.request
        assert request.tool == "run_shell" and request.cwd == workspace.resolve()
        # Greedy decoding of the tiny model writes a nonsense command; never run anything rated dangerous.
        assert request.danger.level != "high", request.summary
        shown = " ".join(plain(w) for w in app.screen.query("Static"))
        assert "run_shell" in shown or request.summary in shown
        assert request.danger.level.upper() in shown
        await answer_approval(pilot, "y")
        await wait_for(pilot, lambda: not app.chat.busy, what="the turn to finish")
        card = app.chat.query(ToolCard).first()
        assert card.status == "ok" and "exit code" in card.result, card.result
        assert card.arguments == request.arguments
        calls = messages(app, "call")
        assert calls and '"command"' in calls[0].text  # the call as generated, streamed before the card

        # Same call again: deny always.
        app.session.reset()
        await send(pilot, "list the files")
        modal = await answer_approval(pilot, "d")
        assert modal.request.arguments == request.arguments
        await wait_for(pilot, lambda: not app.chat.busy, what="the second turn")
        card = list(app.chat.query(ToolCard))[-1]
        assert card.status == "failed" and "denied by the user" in card.result

        # Third time: refused from memory, no modal.
        app.session.reset()
        await send(pilot, "list the files")
        await wait_for(pilot, lambda: not app.chat.busy or isinstance(app.screen, ApprovalScreen),
                       what="the third turn")
        assert not isinstance(app.screen, ApprovalScreen)
        card = list(app.chat.query(ToolCard))[-1]
        assert card.status == "failed" and "deny always" in card.result


@pytest.mark.slow  # the app driven end to end (Pilot, real llama.cpp)
async def test_unanswered_approval_is_a_denial(chat_pair, workspace, home):
    """Escape denies; cancelling the turn while the modal is open closes it and denies."""
    write_config(home, GREEDY)
    app = make_app(chat_pair, workspace, tool_choice="run_shell", max_tokens=30)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "go")
        await answer_approval(pilot, "escape")
        await wait_for(pilot, lambda: not app.chat.busy, what="the turn to finish")
        card = app.chat.query(ToolCard).first()
        assert card.status == "failed" and "denied" in card.result

        app.session.reset()
        await send(pilot, "go")
        await wait_for(pilot, lambda: modal_ready(app), what="the modal")
        app.chat.cancel_turn()  # what Esc on the chat does; here the modal has focus, so cancel directly
        await wait_for(pilot, lambda: not app.chat.busy, 10, "the cancelled turn")
        assert not isinstance(app.screen, ApprovalScreen)
        card = list(app.chat.query(ToolCard))[-1]
        assert card.status == "failed"


@pytest.mark.slow  # the app driven end to end (Pilot, real llama.cpp)
async def test_write_approval_shows_the_diff_and_allows_once(chat_pair, workspace, home):
    """A write through the app's approver (as the agent's worker thread calls it): the modal shows the diff, 'y'
    lets the Toolbox write the file, and 'allow once' is not remembered."""
    write_config(home, GREEDY)
    (workspace / "notes.txt").write_text("old line\n")
    app = make_app(chat_pair, workspace)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        results = []
        args = {"path": "notes.txt", "content": "new line\n"}
        worker = threading.Thread(target=lambda: results.append(app.session.toolbox.call("write_file", args)))
        worker.start()
        await wait_for(pilot, lambda: modal_ready(app), what="the modal")
        assert app.screen.request.diff and "+new line" in app.screen.request.diff
        assert app.screen.query_one("#diff")
        await answer_approval(pilot, "y")
        await wait_for(pilot, lambda: results, 5, "the tool to return")
        worker.join(5)
        assert results[0].ok and (workspace / "notes.txt").read_text() == "new line\n"
        assert app.session.toolbox.policy.remembered() == {"allow": {}, "deny": {}}


# ---- models, settings, palette ----------------------------------------------------------------------------------

@pytest.mark.slow  # the app driven end to end (Pilot, real llama.cpp)
async def test_switch_pair_from_the_models_screen_keeps_the_conversation(chat_pair, workspace, home):
    from localspec.models.install import add_pair

    write_config(home, GREEDY)
    add_pair("first", chat_pair[0], chat_pair[1])
    add_pair("second", chat_pair[0])  # the same target without a draft model
    app = LocalspecApp(AppOptions(flags=RunFlags(pair="first", max_tokens=10, ctx_size=8192), workspace=workspace))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert app.session.info.pair == "first"
        await send(pilot, "hi")
        await wait_for(pilot, lambda: not app.chat.busy, what="the turn")
        before = list(app.session.history)
        await pilot.press("f2")
        await wait_for(pilot, lambda: isinstance(app.screen, ModelsScreen), 5, "the models screen")
        table = app.screen.query_one("#pairs")
        keys = [r.value for r in table.rows]
        assert "first" in keys and "second" in keys
        table.move_cursor(row=keys.index("second"))
        await pilot.press("u")
        await wait_for(pilot, lambda: app.session.loaded and app.session.info and app.session.info.pair == "second",
                       what="the switch")
        assert app.screen is app.chat
        assert "second" in plain(app.chat.query_one("#topbar"))
        assert app.session.history == before  # the conversation carries over
        await send(pilot, "and now?")
        await wait_for(pilot, lambda: not app.chat.busy, what="a turn on the new pair")
        assert "model" not in app.chat.query_one(StatsPanel).view.drafters  # no draft model in "second"
        assert len(app.session.history) == len(before) + 2


@pytest.mark.slow  # 1-4 s each (the fast tier's budget: under a minute)
async def test_first_run_without_models_lands_on_the_models_screen(workspace, home, monkeypatch):
    """Nothing installed: the models screen opens with an explanation (the packaged demo model, when present,
    loads behind it so Esc leads to a working chat)."""
    app = LocalspecApp(AppOptions(flags=RunFlags(max_tokens=5), workspace=workspace))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, ModelsScreen), 10, "the models screen")
        notice = plain(app.screen.query_one("#models-notice"))
        assert "download" in notice.lower()
        pairs = app.screen.query_one("#pairs")
        assert pairs.row_count >= 1
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.chat, 5, "the chat")


@pytest.mark.slow  # the app driven end to end (Pilot, real llama.cpp)
async def test_download_a_pair_with_progress_then_use_it(tiny_hub, workspace):
    app = LocalspecApp(AppOptions(flags=RunFlags(max_tokens=5), workspace=workspace))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, ModelsScreen), 10, "the models screen")
        screen = app.screen
        table = screen.query_one("#pairs")
        keys = [r.value for r in table.rows]
        table.move_cursor(row=keys.index("tiny"))
        await pilot.press("p")
        await wait_for(pilot, lambda: screen.outcome is not None, 30, "the download")
        assert screen.outcome == "ready"
        assert set(screen._bars) == {"tiny-target.gguf", "tiny-draft.gguf"}
        for bar in screen._bars.values():
            assert bar.total and bar.progress == bar.total
        state = table.get_row("tiny")[2]
        assert state == "installed"
        await pilot.press("u")
        await wait_for(pilot, lambda: app.session.loaded and app.session.info.pair == "tiny", 10, "the tiny pair")
        assert app.screen is app.chat


@pytest.mark.slow  # the app driven end to end (Pilot, real llama.cpp)
async def test_download_can_be_cancelled(hub, home, workspace, tmp_path, monkeypatch):
    big = b"GGUF" + os.urandom(48 << 20)
    hub.add_file("test-org/big-GGUF", "big.gguf", big)
    hub.add_file("test-org/big-GGUF", "big-draft.gguf", big[:1 << 20])
    cat = tmp_path / "models.toml"
    cat.write_text(catalog_toml({"big": (("test-org/big-GGUF", "big.gguf", big),
                                         ("test-org/big-GGUF", "big-draft.gguf", big[:1 << 20]))}, "big",
                                sha256=True))
    monkeypatch.setenv("LOCALSPEC_CATALOG", str(cat))
    app = LocalspecApp(AppOptions(flags=RunFlags(max_tokens=5), workspace=workspace))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, ModelsScreen), 10, "the models screen")
        screen = app.screen
        screen.query_one("#pairs").move_cursor(row=0)
        # Pilot.press waits for the app to go idle between keys, which a running download never does, so the two
        # keys go straight to the app: "x" lands while the 48 MB download from the local server is under way.
        app.simulate_key("p")
        app.simulate_key("x")
        await wait_for(pilot, lambda: screen.outcome is not None, 30, "the download to end")
        assert screen.outcome == "cancelled"
        assert screen.query_one("#pairs").get_row("big")[2] == "missing"
        assert not list((home / "data" / "models").rglob("big.gguf"))  # only a resumable .part, if anything


@pytest.mark.slow  # the app driven end to end (Pilot, real llama.cpp)
async def test_settings_screen_validates_and_saves(chat_pair, workspace, home):
    write_config(home, GREEDY)
    app = make_app(chat_pair, workspace)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("f3")
        await wait_for(pilot, lambda: isinstance(app.screen, SettingsScreen), 5, "the settings screen")
        screen = app.screen
        screen.query_one("#cfg-sampling-temperature").value = "hot"
        await pilot.press("ctrl+s")
        error = screen.query_one("#settings-error")
        assert error.display and "temperature" in plain(error)
        assert isinstance(app.screen, SettingsScreen)
        screen.query_one("#cfg-sampling-temperature").value = "0.3"
        screen.query_one("#cfg-approval").value = "read-only"
        screen.query_one("#cfg-drafters-ngram").value = False
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: app.screen is app.chat, 5, "the chat")
        saved = (home / "config" / "config.toml").read_text()
        assert "temperature = 0.3" in saved and 'approval = "read-only"' in saved and "ngram = false" in saved
        assert app.session.settings.sampling.temperature == 0.3
        assert app.session.toolbox.policy.mode == "read-only"  # applied at once


@pytest.mark.slow  # the app driven end to end (Pilot, real llama.cpp)
async def test_copy_save_transcript_origins_and_palette(paying_pair, workspace, home):
    write_config(home, MODEL_ONLY)
    app = make_app(paying_pair, workspace, max_tokens=60)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "hello")
        await wait_for(pilot, lambda: not app.chat.busy, what="the turn")
        reply = messages(app, "assistant")[-1]

        await pilot.press("ctrl+y")
        assert app.clipboard == reply.text
        reply.focus()
        await pilot.press("c")
        assert app.clipboard == reply.text

        await pilot.press("ctrl+s")  # the export dialog (tests/tui/test_sessions.py covers its choices)
        await wait_for(pilot, lambda: app.screen is not app.chat, 5, "the export dialog")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.screen is app.chat, 5, "the chat")
        saved = app.last_transcript
        assert saved is not None and saved.parent == home / "data" / "exports"
        body = saved.read_text()
        assert "## You\n\nhello" in body and reply.text.strip()[:20] in body

        # Origins: the raw text, coloured per token origin; draft-model tokens in the draft colour.
        from localspec.tui.origins import COLOURS

        await pilot.press("ctrl+o")
        assert reply.has_class("-origins")
        coloured = reply.query_one(".origins").content
        styles = {str(span.style) for span in coloured.spans}
        assert COLOURS["model"] in styles and COLOURS["target"] in styles
        assert coloured.plain == reply.text

        # The command palette lists the app's commands and runs them.
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for t in ("Models", "Settings", "Toggle token origins", "Export conversation", "Conversations",
                  "Copy last reply"):
            assert t in titles
        from textual.command import CommandPalette
        from textual.widgets import OptionList

        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette), 5, "the palette")
        await pilot.press(*"Models")
        results = app.screen.query_one(OptionList)
        await wait_for(pilot, lambda: results.option_count and "Models" in str(results.get_option_at_index(0).prompt),
                       5, "the search results")
        await pilot.press("down")
        assert "Models" in str(results.get_option_at_index(results.highlighted).prompt)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ModelsScreen), 5, "the models screen from the palette")
