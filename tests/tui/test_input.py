"""The app as a person uses it, driven with Pilot on real tiny GGUF models: multi-line input and paste, Ctrl+C,
the help screen, the header, the narrow layout, this conversation's settings, and the token-limit note."""

from __future__ import annotations

import pytest
from textual import events

from localspec.tui.screens.help import HelpScreen
from localspec.tui.screens.settings import SettingsScreen
from localspec.tui.widgets.prompt_input import PromptInput
from localspec.tui.widgets.stats_panel import StatsPanel
from tests.tui_helpers import GREEDY, SIZE, make_app, messages, plain, ready, send, settle, wait_for, while_busy, write_config

pytestmark = [pytest.mark.slow, pytest.mark.anyio]  # the app driven end to end (Pilot, real llama.cpp)

PASTED = "\n".join(f"line {i}: some text" for i in range(1, 43))  # the 42-line paste of the report


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def test_paste_keeps_every_line_and_enter_sends(chat_pair, workspace, home):
    write_config(home, GREEDY)
    app = make_app(chat_pair, workspace, max_tokens=5)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        prompt = app.chat.query_one(PromptInput)
        assert app.focused is prompt
        app.post_message(events.Paste(PASTED))  # what a terminal's bracketed paste delivers
        await wait_for(pilot, lambda: prompt.text == PASTED, 5, "the pasted text")
        await settle(pilot)  # whatever the paste's newlines would have set off has happened
        assert not messages(app, "user") and not app.chat.busy  # nothing sent by the paste's newlines
        assert 3 <= prompt.size.height <= 8  # grew to a few lines, then scrolls
        assert prompt.max_scroll_y > 0

        # Ctrl+J (and Shift+Enter / Alt+Enter) insert a new line; typed text goes where the cursor is.
        await pilot.press("ctrl+j", "e", "n", "d")
        await pilot.press("shift+enter", "alt+enter", "x")
        assert prompt.text == PASTED + "\nend\n\nx"
        assert not messages(app, "user")

        app.simulate_key("enter")
        await wait_for(pilot, lambda: messages(app, "user"), 5, "the message to be sent")
        assert messages(app, "user")[0].text == PASTED + "\nend\n\nx"
        assert prompt.text == ""
        await wait_for(pilot, lambda: not app.chat.busy, what="the reply")
        user_turns = [m for m in app.session.history if m["role"] == "user"]
        assert user_turns[-1]["content"] == PASTED + "\nend\n\nx"


async def test_ctrl_c_cancels_a_reply_and_otherwise_hints_at_quit(chat_pair, workspace, home):
    write_config(home, GREEDY)
    app = make_app(chat_pair, workspace, max_tokens=4000)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        app.clear_notifications()
        await pilot.press("ctrl+c")  # nothing running: Textual's hint, and the app keeps running
        await wait_for(pilot, lambda: any("ctrl+q" in str(n.message).lower() for n in app._notifications), 5,
                       "the hint")
        assert app.is_running

        await send(pilot, "write a long story")
        await wait_for(pilot, lambda: messages(app, "assistant") and len(messages(app, "assistant")[-1].text) > 10,
                       what="some streamed text")
        app.simulate_key("ctrl+c")
        await wait_for(pilot, lambda: not app.chat.busy, 10, "the cancelled turn")
        assert app.chat.query_one(StatsPanel).view.finish_reason == "cancelled"
        assert any("cancelled" in m.text for m in messages(app, "note"))
        assert messages(app, "assistant")[-1].text  # the text so far is kept


async def test_f1_help_header_and_approval_mode(chat_pair, workspace, home):
    write_config(home, GREEDY)
    app = make_app(chat_pair, workspace)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        header = plain(app.chat.query_one("#where"))
        assert "ws" in header and "tools on" in header and "approval ask" in header
        app._set_mode("auto")
        assert "approval auto" in plain(app.chat.query_one("#where"))

        await pilot.press("f1")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), 5, "the help screen")
        shown = app.screen.query_one("#help-text").source
        for words in ("Ctrl+J", "est. speedup", "tokens / pass", "prefill", "config.toml", str(home)):
            assert words in shown
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.chat, 5, "the chat")
        keys = [c for c in app.get_system_commands(app.screen) if c.title == "Keys"]
        assert len(keys) == 1 and keys[0].callback == app.action_help  # the palette's "Keys" is this help


async def test_every_key_of_the_help_table_is_one_row(chat_pair, workspace, home):
    """Issue 39.9: "F6, /tools on|off" split the Markdown table at its `|`: each key is one row, whole."""
    from textual.widgets._markdown import MarkdownTable, MarkdownTableCellContents

    from localspec.tui.screens.help import KEYS

    write_config(home, GREEDY)
    app = make_app(chat_pair, workspace)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("f1")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen) and app.screen.query(MarkdownTable), 5,
                       "the help screen")
        await settle(pilot)
        keys_table = app.screen.query(MarkdownTable).first()
        cells = [str(c.content.plain if hasattr(c.content, "plain") else c.content)
                 for c in keys_table.query(MarkdownTableCellContents)]
        rows = [cells[i:i + 2] for i in range(2, len(cells), 2)]  # after the header's two cells
        assert [key for key, _ in rows] == [key for key, _ in KEYS]
        assert dict(rows)["F6, /tools on|off"].startswith("tools on or off for this chat")


async def test_narrow_terminal_folds_the_panel_and_keeps_the_main_keys(chat_pair, workspace, home):
    from textual.widgets._footer import FooterKey

    write_config(home, GREEDY)
    app = make_app(chat_pair, workspace, max_tokens=20)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        panel, line = app.chat.query_one(StatsPanel), app.chat.query_one("#stats-line")
        assert not panel.display and line.display
        await settle(pilot)
        visible = {k.key for k in app.screen.query(FooterKey)
                   if k.region.width and k.region.right <= 80}
        assert {"f1", "f2", "f3", "ctrl+q"} <= visible, visible
        hidden = [k for k in app.screen.query(FooterKey) if k.region.right > 80]
        assert not hidden, [k.key for k in hidden]  # nothing cut at the edge

        await send(pilot, "hi")
        await wait_for(pilot, lambda: not app.chat.busy, what="the reply")
        assert "20 tok" in plain(line) and "tok/pass" in plain(line)

        await pilot.press("ctrl+t")  # the full panel on demand, even when narrow
        assert panel.display and not line.display
        await pilot.press("ctrl+o")  # keys not in the narrow footer still work
        assert app.chat.origins

        await pilot.resize_terminal(130, 40)
        await wait_for(pilot, lambda: not app.chat.narrow, 5, "the wide layout")
        await pilot.press("ctrl+t")
        assert not panel.display and line.display
        await pilot.press("ctrl+t")
        assert panel.display and not line.display


async def test_wide_terminal_shows_the_panel(chat_pair, workspace, home):
    write_config(home, GREEDY)
    app = make_app(chat_pair, workspace)
    async with app.run_test(size=(120, 30)) as pilot:
        await ready(pilot)
        assert app.chat.query_one(StatsPanel).display and not app.chat.query_one("#stats-line").display


async def test_this_conversation_settings_and_the_token_limit(chat_pair, workspace, home):
    write_config(home, GREEDY + '[chat_templates]\nsome-pair = "/templates/some.jinja"\n')
    app = make_app(chat_pair, workspace, max_tokens=6)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "hi")
        await wait_for(pilot, lambda: not app.chat.busy, what="the reply")
        note = messages(app, "note")[-1].text
        assert "stopped at the token limit (6 tokens)" in note and "max tokens" in note

        await pilot.press("f3")
        await wait_for(pilot, lambda: isinstance(app.screen, SettingsScreen), 5, "the settings screen")
        screen = app.screen
        assert screen.query_one("#conv-system").text.startswith(app.session.system_prompt[:20])
        screen.query_one("#conv-max-tokens").value = "lots"
        await pilot.press("ctrl+s")
        assert "max tokens" in plain(screen.query_one("#settings-error"))
        screen.query_one("#conv-system").load_text("You answer in French.")
        screen.query_one("#conv-temperature").value = "0.4"
        screen.query_one("#conv-max-tokens").value = "9"
        help_text = plain(screen.query_one("#cfg-drafters-ngram").parent.query_one(".help"))
        assert "copied from the context" in help_text  # drafter switches are described
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: app.screen is app.chat, 5, "the chat")
        assert app.session.history[0] == {"role": "system", "content": "You answer in French."}
        assert app.session.max_tokens == 9 and app.session.temperature == 0.4
        saved = (home / "config" / "config.toml").read_text()
        assert "French" not in saved and "0.4" not in saved  # the conversation's values stay out of the file
        assert 'some-pair = "/templates/some.jinja"' in saved  # a table without form fields is kept

        await send(pilot, "again")
        await wait_for(pilot, lambda: not app.chat.busy, what="the second reply")
        assert app.chat.query_one(StatsPanel).view.generated == 9
        assert "(9 tokens)" in messages(app, "note")[-1].text

        await pilot.press("ctrl+n")  # a new conversation starts from the defaults
        await wait_for(pilot, lambda: app.session.max_tokens == 6 and app.session.temperature is None, 5,
                       "the new conversation")


async def test_f3_says_where_an_empty_fields_value_comes_from(chat_pair, workspace, home):
    """Issue 39.10: F3 showed "max tokens 200 (default)" when 200 came from --max-tokens."""
    write_config(home, GREEDY)
    for flags, max_tokens, temperature in [({"max_tokens": 200, "temperature": 0.3}, "200 (--max-tokens)",
                                            "0.3 (--temperature)"),
                                           ({"max_tokens": None}, "1024 (default)", "0.0 (config)")]:
        app = make_app(chat_pair, workspace, **flags)
        async with app.run_test(size=SIZE) as pilot:
            await ready(pilot)
            await pilot.press("f3")
            await wait_for(pilot, lambda: isinstance(app.screen, SettingsScreen), 5, "the settings screen")
            assert app.screen.query_one("#conv-max-tokens").placeholder == max_tokens
            assert app.screen.query_one("#conv-temperature").placeholder == temperature


async def test_no_ui_stall_with_the_narrow_summary_and_a_grown_prompt(chat_pair, workspace, home):
    """The one-line summary and a multi-line prompt must not freeze the UI while a reply streams (tui_helpers:
    assert_no_stall)."""
    from tests.tui_helpers import MODEL_ONLY, StallMonitor, assert_no_stall, idle_baseline

    write_config(home, MODEL_ONLY)
    app = make_app(chat_pair, workspace, max_tokens=240)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        idle = await idle_baseline(pilot)
        monitor = StallMonitor(app)
        monitor.start()
        await send(pilot, "hello\nthere\nthree lines")
        app.chat.query_one(PromptInput).value = "typing the next\nmessage meanwhile"
        await while_busy(pilot)
        monitor.stop()
        assert "240 tok" in plain(app.chat.query_one("#stats-line"))
        print(f"\nnarrow: longest stall {monitor.worst * 1000:.1f} ms (idle {idle.worst * 1000:.1f} ms)")
        assert monitor.ticks > 20
        await assert_no_stall(pilot, app, monitor.worst, idle)


async def test_the_chat_warns_when_chatml_stands_in(workspace, home, tmp_path):
    from localspec.launch.flags import RunFlags
    from localspec.runtime.tinymodel import write_tiny_llama
    from localspec.tui.app import LocalspecApp
    from localspec.tui.launch_options import AppOptions

    bare = write_tiny_llama(tmp_path / "bare.gguf", n_ctx_train=8192, chat_template=None)
    app = LocalspecApp(AppOptions(flags=RunFlags(target=str(bare), max_tokens=5, ctx_size=8192), workspace=workspace, record=False))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await wait_for(pilot, lambda: messages(app, "note"), 5, "the warning")
        note = messages(app, "note")[0].text
        assert "bare.gguf has no chat template: using the chatml family's" in note and "--chat-template" in note
