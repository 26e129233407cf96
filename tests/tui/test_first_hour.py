"""The app's first hour, again (issue 28), driven with Pilot on real tiny GGUF models: tools on and off per chat,
a forced tool (/tool NAME), editing, regenerating and deleting messages with keys, the panel and title following
the conversation, the prompt being read shown, every main key in the footer at 80 columns, and the lists' keys
(F4 after a search, F2's Home and End)."""

from __future__ import annotations

import pytest

from localspec.tui.widgets.message import ChatMessage
from localspec.tui.widgets.stats_panel import StatsPanel
from localspec.tui.widgets.toolcard import ToolCard
from tests.hub_server import home  # noqa: F401  (fixture)
from tests.tui_helpers import GREEDY, make_app, messages, plain, ready, settle, wait_for, write_config

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def reply(pilot, text: str) -> None:
    """Send a message and wait for its reply (TurnDone: the chat is no longer busy)."""
    app = pilot.app
    turns = app.session.totals.turns
    prompt = app.chat.query_one("#prompt")
    prompt.focus()
    prompt.value = text
    app.simulate_key("enter")
    await wait_for(pilot, lambda: app.session.totals.turns > turns and not app.chat.busy, 60, "the reply")


async def command(pilot, text: str) -> None:
    """Type a chat command (/tool, /tools) and press Enter: nothing is sent to the model."""
    prompt = pilot.app.chat.query_one("#prompt")
    prompt.focus()
    prompt.value = text
    await pilot.press("enter")
    await settle(pilot)


def header(app) -> str:
    return plain(app.chat.query_one("#topbar")) + plain(app.chat.query_one("#where"))


async def test_every_action_gives_the_keyboard_back_to_the_prompt(chat_pair, workspace, home):  # noqa: F811
    """Issue 39.2: after r, d (yes or no), c, Ctrl+G, Ctrl+N, F6 and closing F1, F3, F4 or Ctrl+S, what is typed goes
    into the prompt and Up edits again, without a Tab first."""
    write_config(home, GREEDY)
    app = make_app(chat_pair, workspace, max_tokens=6, tool_choice="none")
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        await reply(pilot, "first question")
        await reply(pilot, "second question")
        prompt = app.chat.query_one("#prompt")

        async def typing_reaches_the_prompt(after: str) -> None:
            await wait_for(pilot, lambda: not app.chat.busy and app.screen is app.chat, 60, f"the chat after {after}")
            await settle(pilot)
            assert app.focused is prompt, (after, app.focused)
            await pilot.press("z")
            assert prompt.value == "z", after
            prompt.value = ""

        async def on_last_message(*keys: str) -> None:
            prompt.focus()
            await pilot.press("up", *keys)

        def written_again(old) -> bool:
            return not app.chat.busy and messages(app, "assistant") and messages(app, "assistant")[-1] is not old

        old = messages(app, "assistant")[-1]
        await on_last_message("r")  # regenerate the focused reply
        await wait_for(pilot, lambda: written_again(old), 60, "the regenerated reply")
        await typing_reaches_the_prompt("r")
        await on_last_message("c")  # copy it
        await typing_reaches_the_prompt("c")
        await on_last_message("d", "n")  # delete it? no
        await typing_reaches_the_prompt("d, n")
        await on_last_message("d", "y")  # delete it: yes
        await wait_for(pilot, lambda: len(messages(app, "user")) == 1, 10, "the exchange to go")
        await typing_reaches_the_prompt("d, y")
        old = messages(app, "assistant")[-1]
        await pilot.press("ctrl+g")
        await wait_for(pilot, lambda: written_again(old), 60, "the regenerated reply")
        await typing_reaches_the_prompt("Ctrl+G")
        for key in ("f6", "f6"):
            await pilot.press(key)
            await typing_reaches_the_prompt(key)
        for key in ("f1", "f3", "f4", "ctrl+s"):
            await pilot.press(key)
            await wait_for(pilot, lambda: app.screen is not app.chat, 10, f"the screen {key} opens")
            await pilot.press("escape")
            await typing_reaches_the_prompt(f"{key} and Esc")
        await pilot.press("ctrl+n")
        await typing_reaches_the_prompt("Ctrl+N")


async def test_the_session_panel_counts_the_turns_shown(chat_pair, workspace, home):  # noqa: F811
    """Issue 39.10: the panel said "turns 5" with 3 exchanges on the screen: it counted deleted and replaced turns."""
    write_config(home, GREEDY)
    app = make_app(chat_pair, workspace, max_tokens=6, tool_choice="none")
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        for text in ("one", "two", "three"):
            await reply(pilot, text)
        panel = app.chat.query_one(StatsPanel)

        def turns_shown() -> tuple[int, str]:
            return app.session.totals.turns, plain(panel.query_one("#totals")).split("\n")[0].split()[-1]

        assert turns_shown() == (3, "3")
        tokens = app.session.totals.generated
        old = messages(app, "assistant")[-1]
        await pilot.press("ctrl+g")  # the last reply written again: it replaces its turn
        await wait_for(pilot, lambda: not app.chat.busy and messages(app, "assistant")[-1] is not old, 60, "it")
        assert turns_shown() == (3, "3") and app.session.totals.generated == tokens
        app.chat.query_one("#prompt").focus()
        await pilot.press("up", "up", "up", "up", "up", "up", "d", "y")  # the first exchange goes, and its turn
        await wait_for(pilot, lambda: len(messages(app, "user")) == 2, 10, "the first exchange to go")
        assert turns_shown() == (2, "2")
        assert app.chat.top_bar.title == "two"  # the title made from "one" went with it
        cid = app.session.conversation_id
        await pilot.press("ctrl+n")
        assert app.open_conversation(cid)  # reopened: the same count, from what was saved
        await wait_for(pilot, lambda: len(messages(app, "user")) == 2, 10, "the reopened conversation")
        assert turns_shown() == (2, "2")


@pytest.mark.slow  # 1-4 s each (the fast tier's budget: under a minute)
async def test_tools_switch_per_chat_and_a_forced_tool(chat_pair, workspace, home):  # noqa: F811
    write_config(home, GREEDY)
    (workspace / "notes.txt").write_text("hello\n")
    app = make_app(chat_pair, workspace, max_tokens=40)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        assert app.session.tools_on and "tools on (F6)" in header(app)
        await pilot.press("f6")
        assert not app.session.tools_on and app.session.agent.tool_specs() == []
        assert "tools off" in header(app)
        await command(pilot, "/tools on")
        assert app.session.tools_on and not app.chat.busy  # a command, not a message
        await command(pilot, "/tool nosuch")
        assert "no tool 'nosuch'" in messages(app, "error")[-1].text
        await command(pilot, "/tool list_dir")
        assert app.session.next_tool == "list_dir" and "next: list_dir" in header(app)
        await reply(pilot, "what is in here?")
        cards = list(app.chat.query(ToolCard))
        assert cards, [(m.role, m.text[:200]) for m in app.chat.query(ChatMessage)]
        assert cards and cards[0].tool_name == "list_dir"  # the tiny model called the tool it was made to call
        assert app.session.next_tool is None and "tools on" in header(app)


@pytest.mark.slow  # 1-4 s each (the fast tier's budget: under a minute)
async def test_edit_regenerate_and_delete_with_keys(chat_pair, workspace, home):  # noqa: F811
    write_config(home, GREEDY)
    app = make_app(chat_pair, workspace, max_tokens=6, tool_choice="none")
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        await reply(pilot, "first question")
        await reply(pilot, "second question")
        session = app.session
        users = lambda: [m["content"] for m in session.history if m["role"] == "user"]  # noqa: E731
        prompt = app.chat.query_one("#prompt")
        prompt.focus()
        await pilot.press("up")  # an empty prompt: the last message takes the focus
        assert isinstance(app.focused, ChatMessage) and app.focused.role == "assistant"
        await pilot.press("up")
        assert app.focused.role == "user" and app.focused.text == "second question"
        await pilot.press("e")
        assert app.focused is prompt and prompt.value == "second question"
        prompt.value = "second, edited"
        app.simulate_key("enter")
        await wait_for(pilot, lambda: not app.chat.busy and users() == ["first question", "second, edited"], 60,
                       "the edited message to be answered")
        assert [m.text for m in messages(app, "user")] == ["first question", "second, edited"]

        before = len(session.history)
        app.chat.query_one("#prompt").focus()
        await pilot.press("ctrl+g")  # regenerate the last reply: the same question, asked again in its place
        await wait_for(pilot, lambda: not app.chat.busy and len(session.history) == before, 60, "the new reply")
        assert users() == ["first question", "second, edited"]

        app.chat.query_one("#prompt").focus()
        await pilot.press("up", "up", "up", "up")  # back to the first question
        assert app.focused.role == "user" and app.focused.text == "first question"
        await pilot.press("d")
        await pilot.press("y")
        await wait_for(pilot, lambda: users() == ["second, edited"], 10, "the first exchange to go")
        assert [m.text for m in messages(app, "user")] == ["second, edited"]
        saved = session.conversations.messages(session.conversation_id)
        assert [m["content"] for m in saved if m["role"] == "user"] == ["second, edited"]


@pytest.mark.slow  # 1-4 s each (the fast tier's budget: under a minute)
async def test_panel_and_title_follow_the_conversation(chat_pair, workspace, home):  # noqa: F811
    write_config(home, GREEDY)
    app = make_app(chat_pair, workspace, max_tokens=6, tool_choice="none")
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        statuses: list[str] = []
        original = app.chat.set_status
        app.chat.set_status = lambda s: (statuses.append(s), original(s))[1]
        await reply(pilot, "tell me about the weather")
        # the ~2K-token prompt of the tiny vocabulary was read with the progress shown
        assert any(s.startswith("reading prompt: 0 of ") for s in statuses)
        assert "tell me about the weather" in header(app)  # the conversation's title
        panel = app.chat.query_one(StatsPanel)
        assert panel.view is not None and panel.view.first_token_s is not None
        cid = app.session.conversation_id
        await pilot.press("ctrl+n")
        assert panel.view is None and "no generation yet" in plain(panel.query_one("#turn-stats"))
        assert "weather" not in header(app) and "localspec" in header(app)
        assert app.session.totals.turns == 0
        assert app.open_conversation(cid)
        await wait_for(pilot, lambda: "tell me about the weather" in header(app), 5, "the reopened conversation")
        assert panel.view is None and app.session.totals.turns == 1  # its own turn, not "turns 0"
        assert "tell me about the weather" in header(app)


async def test_every_main_key_is_in_the_footer_at_80_columns(chat_pair, workspace, home):  # noqa: F811
    from textual.widgets._footer import FooterKey

    app = make_app(chat_pair, workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await settle(pilot)
        shown = {k.key_display: k.region for k in app.screen.query(FooterKey) if k.region.width}
        labels = {k.key_display: k.description for k in app.screen.query(FooterKey) if k.region.width}
        for key in ("f1", "f2", "f3", "f4", "f5", "^n", "^s", "^r", "^q"):
            assert key in shown, (key, labels)
            assert shown[key].right <= 80, (key, shown[key])  # whole, not cut
        assert labels["f4"] == "Chats" and labels["f5"] == "Tools" and labels["^r"] == "Think"


@pytest.mark.slow  # 1-4 s each (the fast tier's budget: under a minute)
async def test_the_lists_keep_their_keys(chat_pair, workspace, home):  # noqa: F811
    from textual.widgets import DataTable, Input

    write_config(home, GREEDY)
    app = make_app(chat_pair, workspace, max_tokens=4, tool_choice="none")
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        for text in ("alpha", "beta", "gamma"):
            await reply(pilot, text)
            await pilot.press("ctrl+n")
        await pilot.press("f4")
        table = app.screen.query_one(DataTable)
        await pilot.press("slash")
        assert isinstance(app.focused, Input)
        await pilot.press("b", "e")
        assert table.row_count == 1
        await pilot.press("escape")  # clears the search, and the list takes the keys again
        assert app.focused is table and table.row_count == 3
        await pilot.press("end")
        assert table.cursor_row == 2
        await pilot.press("home")
        assert table.cursor_row == 0
        await pilot.press("slash", "down")  # Down from the search goes to the list too
        assert app.focused is table
        await pilot.press("escape", "escape")
        await pilot.press("f2")
        pairs = app.screen.query_one("#pairs", DataTable)
        await pilot.press("end")
        assert pairs.cursor_row == pairs.row_count - 1 and pairs.scroll_x == 0  # a row, not sideways
        await pilot.press("home")
        assert pairs.cursor_row == 0


async def test_context_size_and_threads_in_the_settings_take_effect_at_once(chat_pair, workspace, home):  # noqa: F811
    write_config(home, GREEDY)
    app = make_app(chat_pair, workspace, ctx_size=None, threads=None)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        assert app.session.engine.target.n_ctx == 8192
        app.set_config("ctx_size", "4096")  # what Ctrl+S on the settings screen does with the form's values
        app.set_config("threads", "1")
        await wait_for(pilot, lambda: app.session.loaded and app.session.engine.target.n_ctx == 4096, 60,
                       "the pair reloaded with the new context size")
        assert app.session.config().context.n_threads == 1
