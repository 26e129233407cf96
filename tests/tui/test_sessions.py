"""Saved conversations in the app (Pilot, real llama.cpp on the tiny GGUF pair): every turn is saved, Ctrl+S exports
where the user says, Ctrl+N starts a new conversation with fresh totals, the sessions screen (F4) opens, renames,
deletes and searches, and a conversation given at start (--resume / --continue) is shown and continued."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from localspec.conversations import ConversationStore
from localspec.launch.flags import RunFlags
from localspec.tui.launch_options import AppOptions
from localspec.tui.screens.export import ExportScreen
from localspec.tui.screens.sessions import ConfirmScreen, RenameScreen, SessionsScreen
from localspec.tui.widgets.reasoning import ReasoningBlock
from localspec.tui.widgets.stats_panel import StatsPanel
from localspec.tui.widgets.toolcard import ToolCard
from tests.tui_helpers import GREEDY, SIZE, make_app, messages, ready, send, wait_for, write_config

pytestmark = pytest.mark.anyio


def store_of(home: Path) -> ConversationStore:
    return ConversationStore(home / "data" / "conversations.sqlite3")


def toasts(app) -> list[str]:
    return [n.message for n in app._notifications]


def seed(home: Path) -> tuple[str, str]:
    """Two saved conversations: one with a tool call that worked and one that failed."""
    with store_of(home) as store:
        a = store.create(pair="elsewhere", workspace="/nowhere", system="You are terse.")
        store.add_message(a, {"role": "user", "content": "alpha: what is in notes.txt?"})
        store.add_message(a, {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "notes.txt"}'}},
            {"id": "c2", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "gone.txt"}'}}]})
        store.add_message(a, {"role": "tool", "tool_call_id": "c1", "name": "read_file", "content": "hello"})
        store.add_message(a, {"role": "tool", "tool_call_id": "c2", "name": "read_file",
                              "content": "Error: read_file: no such file"})
        store.add_message(a, {"role": "assistant", "content": "It says hello.",
                              "reasoning_content": "The file holds one word."})
        b = store.create(pair="elsewhere", workspace="/nowhere")
        store.add_message(b, {"role": "user", "content": "beta: unrelated"})
        store.add_message(b, {"role": "assistant", "content": "ok"})
    return a, b


@pytest.mark.slow  # the app driven end to end (Pilot, real llama.cpp)
async def test_turns_are_saved_and_ctrl_s_exports_where_the_user_says(chat_pair, tmp_path, home):
    write_config(home, GREEDY)
    ws = tmp_path / "ws"
    ws.mkdir()
    app = make_app(chat_pair, ws, max_tokens=10)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("ctrl+s")
        assert any("nothing to export yet" in t for t in toasts(app))
        await send(pilot, "hello there\nsecond line")
        await wait_for(pilot, lambda: not app.chat.busy, what="the turn")
        cid = app.session.conversation_id
        assert cid is not None
        with store_of(home) as store:
            conv = store.get(cid, turns=True)
        assert conv.title == "hello there"
        assert conv.messages == app.session.history[1:] and [m["role"] for m in conv.messages][0] == "user"
        assert conv.system == app.session.history[0]["content"] and conv.workspace == str(ws)
        assert conv.params["max_tokens"] == 10 and conv.params["target"] == str(chat_pair[0])
        assert len(conv.turns) == 1 and conv.turns[0]["stats"]["generated_tokens"] > 0

        # Ctrl+S: a dialog with the default path in the data dir; Enter writes it and the toast says where.
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: isinstance(app.screen, ExportScreen), 5, "the export dialog")
        path_input = app.screen.query_one("#export-path")
        assert Path(path_input.value).parent == home / "data" / "exports"
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.screen is app.chat, 5, "the chat")
        md = app.last_transcript
        assert md.parent == home / "data" / "exports" and "## You\n\nhello there" in md.read_text()
        assert any(str(md) in t for t in toasts(app))
        assert not list(ws.iterdir())  # nothing lands in the workspace any more

        # JSON, to a path the user types; an existing file is not replaced and the dialog says so.
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: isinstance(app.screen, ExportScreen), 5, "the export dialog")
        dialog = app.screen
        await pilot.click("#fmt-json")
        assert dialog.fmt == "json" and dialog.query_one("#export-path").value.endswith(".json")
        dialog.query_one("#export-path").value = str(md)
        dialog.query_one("#export-path").focus()
        await pilot.press("enter")
        assert app.screen is dialog and "already exists" in str(dialog.query_one("#export-error").render())
        target = tmp_path / "mine.json"
        dialog.query_one("#export-path").value = str(target)
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.screen is app.chat, 5, "the chat")
        assert json.loads(target.read_text())["id"] == cid and app.last_transcript == target


@pytest.mark.slow  # the app driven end to end (Pilot, real llama.cpp)
async def test_ctrl_n_starts_a_new_conversation_and_restarts_the_totals(chat_pair, tmp_path, home):
    write_config(home, GREEDY)
    app = make_app(chat_pair, tmp_path, max_tokens=8)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        app.session.set_conversation_settings(system_prompt="Answer briefly.", temperature=0.0, max_tokens=6)
        await send(pilot, "first question")
        await wait_for(pilot, lambda: not app.chat.busy, what="the turn")
        first = app.session.conversation_id
        panel = app.chat.query_one(StatsPanel)
        assert app.session.totals.turns == 1 and panel.totals.turns == 1
        await pilot.press("ctrl+n")
        assert app.session.conversation_id is None
        assert app.session.totals.turns == 0 and panel.totals.turns == 0  # the session totals restart
        assert not messages(app, "user") and [m["role"] for m in app.session.history] == ["system"]
        await send(pilot, "second question")
        await wait_for(pilot, lambda: not app.chat.busy, what="the turn")
        second = app.session.conversation_id
        assert second not in (None, first) and app.session.totals.turns == 1
        with store_of(home) as store:
            assert [c.title for c in store.list()] == ["second question", "first question"]
            assert store.get(first).system == "Answer briefly."

        # Reopening the first brings back its own system prompt, temperature and token limit.
        assert app.session.max_tokens == 8 and app.session.temperature is None  # Ctrl+N: the defaults
        assert app.open_conversation(first)
        assert app.session.system_prompt == "Answer briefly." and app.session.max_tokens == 6
        assert app.session.temperature == 0.0


@pytest.mark.slow  # the app driven end to end (Pilot, real llama.cpp)
async def test_sessions_screen_searches_renames_deletes_and_opens(chat_pair, tmp_path, home):
    write_config(home, GREEDY)
    a, b = seed(home)
    app = make_app(chat_pair, tmp_path, max_tokens=8)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("f4")
        await wait_for(pilot, lambda: isinstance(app.screen, SessionsScreen), 5, "the sessions screen")
        screen = app.screen
        table = screen.query_one("#sessions")
        assert screen.ids == [b, a] and table.row_count == 2  # newest first

        # Search titles.
        await pilot.press("slash", *"alpha")
        assert screen.ids == [a]
        await pilot.press("escape")  # clears the search
        assert screen.ids == [b, a]
        table.focus()

        # Rename the second row.
        table.move_cursor(row=1)
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, RenameScreen), 5, "the rename dialog")
        app.screen.query_one("#rename-title").value = "Notes question"
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.screen is screen, 5, "the list")
        with store_of(home) as store:
            assert store.get(a).title == "Notes question"

        # Delete the first row, after confirming (n keeps it).
        table.move_cursor(row=screen.ids.index(b))
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 5, "the confirmation")
        await pilot.press("n")
        assert screen.ids == [b, a]
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 5, "the confirmation")
        await pilot.press("y")
        await wait_for(pilot, lambda: screen.ids == [a], 5, "the deletion")
        with store_of(home) as store:
            assert [c.id for c in store.list()] == [a]

        # Open the other: the chat shows it, tool calls as finished cards, and the model continues it.
        table.move_cursor(row=0)
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.screen is app.chat and messages(app, "user"), 5, "the conversation")
        assert app.session.conversation_id == a
        assert [m.text for m in messages(app, "user")] == ["alpha: what is in notes.txt?"]
        assert [m.text for m in messages(app, "assistant")] == ["It says hello."]
        cards = list(app.chat.query(ToolCard))
        assert [c.status for c in cards] == ["ok", "failed"] and cards[0].result == "hello"
        thought = app.chat.query_one(ReasoningBlock)  # a reasoning model's thinking, collapsed
        assert thought.collapsed and thought.text == "The file holds one word."
        assert app.session.history[0] == {"role": "system", "content": "You are terse."}
        assert any("it was held in /nowhere" in t for t in toasts(app))  # a different workspace is pointed out
        await send(pilot, "and now?")
        await wait_for(pilot, lambda: not app.chat.busy, what="the turn")
        with store_of(home) as store:
            conv = store.get(a)
        assert conv.message_count == 7 and conv.messages[5] == {"role": "user", "content": "and now?"}
        assert conv.title == "Notes question"


async def test_a_conversation_given_at_start_is_shown_and_continued(chat_pair, tmp_path, home):
    """`localspec --resume ID` / `--continue` reach the app as AppOptions.resume."""
    write_config(home, GREEDY)
    a, _ = seed(home)
    app = make_app(chat_pair, tmp_path, max_tokens=8, resume=a)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await wait_for(pilot, lambda: len(messages(app, "user")) == 1, 5, "the saved messages")
        assert app.session.conversation_id == a and len(app.session.history) == 6
        assert len(list(app.chat.query(ToolCard))) == 2
        await send(pilot, "more")
        await wait_for(pilot, lambda: not app.chat.busy, what="the turn")
        with store_of(home) as store:
            assert store.get(a).message_count == 7


@pytest.mark.slow  # the app driven end to end (Pilot, real llama.cpp)
async def test_nothing_is_saved_when_recording_is_off(chat_pair, tmp_path, home):
    write_config(home, GREEDY)
    app = make_app(chat_pair, tmp_path, max_tokens=5, record=False)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "hi")
        await wait_for(pilot, lambda: not app.chat.busy, what="the turn")
        assert app.session.conversation_id is None
        await pilot.press("ctrl+s")
        assert any("not being saved" in t for t in toasts(app))
    assert not (home / "data" / "conversations.sqlite3").exists()


@pytest.mark.slow  # the app driven end to end (Pilot, real llama.cpp)
def test_resume_options_reach_the_session(chat_pair, tmp_path, home):
    """A resumed conversation continues on its own model pair when no pair is given (and it is still installed)."""
    from localspec.models.install import add_pair
    from localspec.tui.session import ChatSession

    add_pair("mine", chat_pair[0], chat_pair[1])
    a, _ = seed(home)
    with store_of(home) as store:
        store.update(a, params={"pair_name": "mine"})
    session = ChatSession(AppOptions(workspace=tmp_path, resume=a))
    try:
        assert session.initial_selection().pair == "mine"
        assert [m["role"] for m in session.history] == ["system", "user", "assistant", "tool", "tool", "assistant"]
    finally:
        session.shutdown()
    with store_of(home) as store:
        store.update(a, params={"pair_name": "uninstalled"})
    session = ChatSession(AppOptions(flags=RunFlags(target=str(chat_pair[0])), workspace=tmp_path, resume=a))
    try:
        assert session.initial_selection().target == chat_pair[0]  # an explicit choice wins
    finally:
        session.shutdown()


@pytest.mark.slow  # the app driven end to end (Pilot, real llama.cpp)
def test_help_names_the_conversation_keys():
    from localspec.tui.screens.help import KEYS

    keys = dict(KEYS)
    assert "saved conversations" in keys["F4"] and "export" in keys["Ctrl+S"].lower()
    assert "new conversation" in keys["Ctrl+N"]
