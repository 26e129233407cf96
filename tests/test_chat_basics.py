"""Chat basics (issue 28, part 5) below the app: a cancelled or failed reply never leaves the conversation ending on
a user message nobody answered (it is kept, marked, and exports say so; the model never sees the mark); regenerate,
edit-and-resend and delete change the conversation and its saved copy alike; search covers message text; a reopened
conversation's totals are its own. Real llama.cpp on the tiny GGUF, a real SQLite store."""

from __future__ import annotations

import threading

import pytest

from localspec.agent import Agent
from localspec.conversations import ConversationStore, render
from localspec.runtime.context import ContextSettings
from localspec.runtime.pair import load_pair
from localspec.speculative.builder import build_engine
from localspec.speculative.decoder import GenParams
from localspec.speculative.drafting import TARGET_ONLY
from localspec.tools import Policy, Toolbox
from localspec.turns.conversation import model_messages
from tests.hub_server import home  # noqa: F401  (fixture: an empty LOCALSPEC_HOME)


@pytest.fixture(scope="module")
def engine(tiny_target):
    pair = load_pair(tiny_target, None, ctx=ContextSettings(n_ctx=2048, n_threads=1))
    yield build_engine(pair, TARGET_ONLY)
    pair.close()


def agent_on(engine, tmp_path, max_tokens=6) -> Agent:
    return Agent(engine, Toolbox(tmp_path, Policy("read-only")), system="sys", params=GenParams(max_tokens=max_tokens),
                 max_steps=1, tools=["list_dir"])


def test_a_reply_cancelled_before_its_first_token_is_kept_marked(engine, tmp_path):
    agent = agent_on(engine, tmp_path)
    cancel = threading.Event()
    cancel.set()
    result = agent.run("hello", tool_choice="none", cancel=cancel)
    assert result.finish_reason == "cancelled"
    assert agent.messages[-1] == {"role": "assistant", "content": "", "cancelled": True}
    assert model_messages(agent.messages)[-1] == {"role": "assistant", "content": ""}  # the model never sees it
    agent.run("and now?", tool_choice="none")  # the next turn renders and runs on a valid conversation
    assert [m["role"] for m in agent.messages] == ["system", "user", "assistant", "user", "assistant"]


def test_a_failed_reply_is_kept_marked_and_the_error_still_raised(engine, tmp_path, monkeypatch):
    agent = agent_on(engine, tmp_path)

    def broken(*a, **kw):
        raise RuntimeError("the engine broke")

    monkeypatch.setattr(agent.provider, "run", broken)
    with pytest.raises(RuntimeError):
        agent.run("hello", tool_choice="none")
    assert agent.messages[-1]["role"] == "assistant" and "the engine broke" in agent.messages[-1]["failed"]
    assert agent.last_result.messages[-1] is agent.messages[-1]  # recorded like any message (the store gets it)


def test_exports_mark_a_cancelled_and_a_failed_reply(tmp_path):
    with ConversationStore(tmp_path / "c.sqlite3") as store:
        cid = store.create()
        for m in ({"role": "user", "content": "write a story"},
                  {"role": "assistant", "content": "Once upon", "cancelled": True},
                  {"role": "user", "content": "again"},
                  {"role": "assistant", "content": "", "cancelled": True},
                  {"role": "user", "content": "once more"},
                  {"role": "assistant", "content": "", "failed": "context full"}):
            store.add_message(cid, m)
        md = render(store.get(cid), "md")
    assert md.count("## Assistant (cancelled)") == 2 and "## Assistant (failed)" in md
    assert "*The reply was cancelled: what it had written so far.*\n\nOnce upon" in md
    assert "*The reply was cancelled before it wrote anything.*" in md
    assert "*The reply failed: context full*" in md


def test_delete_messages_and_search_in_message_text(tmp_path):
    with ConversationStore(tmp_path / "c.sqlite3") as store:
        cid = store.create()
        for i, role in enumerate(["user", "assistant", "user", "assistant", "user", "assistant"]):
            store.add_message(cid, {"role": role, "content": f"{role} {i} needle{i}"})
        other = store.create(title="needle in the title")
        assert {c.id for c in store.list("NEEDLE3")} == {cid}  # the text of a message, not only titles
        assert {c.id for c in store.list("needle")} == {cid, other}
        assert store.delete_messages(cid, 2, 4) == 2
        assert [m["content"] for m in store.messages(cid)] == ["user 0 needle0", "assistant 1 needle1",
                                                                "user 4 needle4", "assistant 5 needle5"]
        assert store.delete_messages(cid, 2) == 2 and len(store.messages(cid)) == 2
        assert store.list("needle3") == []
        with pytest.raises(ValueError):
            store.delete_messages(cid, 3, 1)


def session_on(tiny_target, workspace, max_tokens=4, tool_choice="none"):
    from localspec.launch.flags import RunFlags
    from localspec.tui.launch_options import AppOptions
    from localspec.tui.session import ChatSession

    flags = RunFlags(target=str(tiny_target), no_draft=True, threads=1, ctx_size=2048, max_tokens=max_tokens)
    session = ChatSession(AppOptions(flags=flags, workspace=workspace, tool_choice=tool_choice, record=True))
    session.load(session.initial_selection())
    return session


def say(session, text, **kw):
    events = []
    session.run_turn(text, events.append, threading.Event(), **kw)
    return events


def test_regenerate_edit_and_delete_change_the_saved_copy_too(home, tiny_target, tmp_path):  # noqa: F811
    session = session_on(tiny_target, tmp_path)
    try:
        for text in ("first question", "second question", "third question"):
            say(session, text)
        store, cid = session.conversations, session.conversation_id
        saved = lambda: [m["content"] for m in store.messages(cid) if m["role"] == "user"]  # noqa: E731
        assert saved() == ["first question", "second question", "third question"]
        assert session.history == [session.history[0], *store.messages(cid)]

        # Regenerate the last reply: its question comes back to be sent again, its reply goes.
        assert session.take_back(-1) == "third question"
        assert saved() == ["first question", "second question"]
        say(session, "third question")
        assert saved() == ["first question", "second question", "third question"]

        # Edit the second question: it and everything after it are replaced by the new text.
        assert session.take_back(1) == "second question"
        say(session, "second, rephrased")
        assert saved() == ["first question", "second, rephrased"]

        # Delete the first exchange: its question and its reply, nothing else.
        assert session.delete_exchange(0) == 2
        assert saved() == ["second, rephrased"] and [m["role"] for m in session.history] == ["system", "user",
                                                                                             "assistant"]
        assert session.history[1:] == store.messages(cid)
        with pytest.raises(Exception):
            session.exchange(5)
    finally:
        session.shutdown()


def test_a_reopened_conversation_shows_its_own_turns(home, tiny_target, tmp_path):  # noqa: F811
    session = session_on(tiny_target, tmp_path)
    try:
        say(session, "one")
        say(session, "two")
        cid = session.conversation_id
        session.reset()
        assert session.totals.turns == 0
        session.open_conversation(cid)
        assert session.totals.turns == 2 and session.totals.generated > 0  # its own turns, not "turns 0"
    finally:
        session.shutdown()


def test_tools_off_for_a_chat_means_no_tool_definitions_in_the_prompt(home, tiny_target, tmp_path):  # noqa: F811
    from localspec.settings.config_toml import set_config_value

    set_config_value("approval", "read-only")  # the reading tools only: their definitions fit the tiny model
    session = session_on(tiny_target, tmp_path, max_tokens=48, tool_choice="auto")
    try:
        agent = session.agent
        assert session.tools_on and agent.tool_specs()
        session.tools_on = False
        assert agent.tool_specs() == []
        events = say(session, "hello", tool="none")
        done = [e for e in events if type(e).__name__ == "Done"][0]
        assert done.result.stats.generated_tokens > 0
        assert store_params(session)["tools"] is False  # remembered with the conversation
        cid = session.conversation_id
        session.reset()
        assert session.tools_on  # a new chat starts from the settings (tools.enabled)
        session.open_conversation(cid)
        assert not session.tools_on  # ... and a reopened one from its own choice
        say(session, "please", tool="list_dir")  # forcing a tool turns them on for the chat
        assert session.tools_on
        start = max(i for i, m in enumerate(agent.messages) if m["role"] == "user")
        calls = [c["function"]["name"] for m in agent.messages[start:] for c in m.get("tool_calls") or []]
        assert calls[:1] == ["list_dir"]
    finally:
        session.shutdown()


def store_params(session) -> dict:
    return session.conversations.get(session.conversation_id, messages=False).params


@pytest.mark.slow  # 1-4 s each (the fast tier's budget: under a minute)
def test_a_run_conversation_resumed_in_the_app_keeps_its_pair(home, tmp_path):  # noqa: F811
    """`run --tools` on the demo records pair_name "demo"; the app reopening it loads the demo and keeps calling it
    "demo" (it used to rewrite the pair to the model's file name)."""
    from localspec.conversations import open_store
    from localspec.models.selection import demo_model_path
    from localspec.tui.launch_options import AppOptions
    from localspec.tui.session import ChatSession

    if demo_model_path() is None:
        pytest.skip("needs the packaged demo model")
    with open_store() as store:
        cid = store.create(pair="demo", workspace=str(tmp_path), params={"pair_name": "demo",
                                                                          "target": str(demo_model_path())})
        store.add_message(cid, {"role": "user", "content": "hi"})
        store.add_message(cid, {"role": "assistant", "content": "hello"})
    session = ChatSession(AppOptions(workspace=tmp_path, resume=cid))
    try:
        sel = session.initial_selection()
        assert sel.demo and sel.pair == "demo"
        session.load(sel)
        meta = session.conversation_meta()
        assert meta["pair"] == "demo" and meta["params"]["pair_name"] == "demo"
    finally:
        session.shutdown()


def test_serve_names_the_demo_model_demo(home):  # noqa: F811
    """On a fresh install `serve` runs the demo: clients see the model as "demo", the name `models` shows."""
    from localspec.cli import build_parser
    from localspec.commands.shared_flags import config_from_args
    from localspec.models.selection import demo_model_path

    if demo_model_path() is None:
        pytest.skip("needs the packaged demo model")
    config = config_from_args(build_parser().parse_args(["serve"]))
    assert config.selection.demo and config.pair == "demo"  # serve's model id is `--model-name or config.pair`
