"""The conversation store (SQLite, WAL, one transaction per message), the exporter, and the recorder that writes an
agent's conversation as it runs (real llama.cpp on the tiny GGUF)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from localspec.conversations import (
    ConversationError,
    ConversationStore,
    available_path,
    default_db_path,
    export,
    open_store,
    render,
    title_from,
)
from localspec.conversations.exports import ExportExists

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def store(tmp_path):
    with ConversationStore(tmp_path / "c.sqlite3") as s:
        yield s


def fill(store, title_text="Fix the build\nthen more", pair="qwen3-1.7b") -> str:
    cid = store.create(pair=pair, workspace="/work/ws", system="be brief", params={"temperature": 0.0})
    store.add_message(cid, {"role": "user", "content": title_text})
    store.add_message(cid, {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'}}]},
        stats={"generated_tokens": 7})
    store.add_message(cid, {"role": "tool", "tool_call_id": "c1", "name": "read_file", "content": "hello ``` world"})
    store.add_message(cid, {"role": "assistant", "content": "It says hello."}, stats={"generated_tokens": 4})
    store.add_turn(cid, finish_reason="stop", steps=2, stats={"generated_tokens": 11})
    return cid


@pytest.mark.parametrize("text, title", [
    ("Fix the build\nthen more", "Fix the build"),
    ("\n\n   spaced    out  \n", "spaced out"),
    ("x" * 100, "x" * 59 + "…"),
    ("", ""),
])
def test_title_from_the_first_line(text, title):
    assert title_from(text) == title


def test_database_is_wal_in_the_data_dir(home):
    with open_store() as s:
        s.create()
    path = default_db_path()
    assert path == home / "data" / "conversations.sqlite3" and path.exists()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_messages_tool_calls_stats_and_turns_round_trip(store):
    cid = fill(store)
    conv = store.get(cid, turns=True)
    assert conv.title == "Fix the build"  # from the first user message
    assert (conv.pair, conv.workspace, conv.system, conv.params) == ("qwen3-1.7b", "/work/ws", "be brief",
                                                                    {"temperature": 0.0})
    assert [m["role"] for m in conv.messages] == ["user", "assistant", "tool", "assistant"]
    assert conv.messages[1]["tool_calls"][0]["function"]["name"] == "read_file"
    assert conv.messages[2]["tool_call_id"] == "c1"
    assert store.message_stats(cid) == [None, {"generated_tokens": 7}, None, {"generated_tokens": 4}]
    assert conv.turns[0]["finish_reason"] == "stop" and conv.turns[0]["stats"] == {"generated_tokens": 11}
    assert conv.history()[0] == {"role": "system", "content": "be brief"}  # what the agent continues from
    d = conv.to_dict()
    assert {"id", "title", "created", "updated", "pair", "workspace", "messages"} <= set(d)
    assert d["created"].endswith("Z") and all({"role", "content"} <= set(m) for m in d["messages"])


def test_list_is_newest_first_and_searches_titles(store):
    a = fill(store, "alpha 100% done")
    b = fill(store, "beta_test")
    assert [c.id for c in store.list()] == [b, a]
    store.add_message(a, {"role": "user", "content": "more"})  # activity moves it to the top
    assert [c.id for c in store.list()] == [a, b]
    assert [c.id for c in store.list("ALPHA")] == [a]
    assert [c.id for c in store.list("100%")] == [a]  # LIKE wildcards in the search are literal
    assert [c.id for c in store.list("%")] == [a]
    assert [c.id for c in store.list("a_t")] == [b]
    assert store.list("zzz") == [] and len(store.list(limit=1)) == 1
    assert store.get(a).title == "alpha 100% done"  # the title stays the first message's


def test_rename_delete_and_ids(store):
    cid = fill(store)
    assert store.resolve(cid[:4]) == cid  # a unique prefix is enough
    assert store.rename(cid, "  My   title ") == "My title"
    store.add_message(cid, {"role": "user", "content": "again"})
    assert store.get(cid).title == "My title"  # a chosen title is kept
    with pytest.raises(ConversationError, match="cannot be empty"):
        store.rename(cid, "  ")
    store.delete(cid)
    assert store.list() == []
    with sqlite3.connect(store.path) as db:  # its messages and turns went with it
        assert db.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 0
        assert db.execute("SELECT COUNT(*) FROM turns").fetchone()[0] == 0
    for bad in (cid, "", "'; DROP TABLE conversations; --", "%"):
        with pytest.raises(ConversationError):
            store.get(bad)
    with pytest.raises(ConversationError, match="no conversation"):
        store.delete(cid)
    with pytest.raises(ConversationError, match="deleted"):
        store.add_message(cid, {"role": "user", "content": "x"})


def test_an_ambiguous_prefix_is_an_error(store):
    ids = {store.create() for _ in range(40)}  # 8 hex digits each: some share a first digit
    first = {}
    for i in ids:
        first.setdefault(i[0], []).append(i)
    shared = next(p for p, group in first.items() if len(group) > 1)
    with pytest.raises(ConversationError, match="several"):
        store.resolve(shared)


def test_a_killed_process_keeps_every_committed_message(tmp_path):
    """One transaction per message: a process killed mid-reply (os._exit, no cleanup) loses nothing written."""
    db = tmp_path / "c.sqlite3"
    script = textwrap.dedent(f"""
        import os
        from localspec.conversations import ConversationStore
        s = ConversationStore({str(db)!r})
        cid = s.create()
        for i in range(5):
            s.add_message(cid, {{"role": "user" if i % 2 == 0 else "assistant", "content": f"m{{i}}"}})
        print(cid, flush=True)
        os._exit(9)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.returncode == 9, proc.stderr
    with ConversationStore(db) as s:
        conv = s.get(proc.stdout.strip())
    assert [m["content"] for m in conv.messages] == ["m0", "m1", "m2", "m3", "m4"]


def test_not_a_database_is_one_clear_error(tmp_path):
    bad = tmp_path / "c.sqlite3"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(ConversationError, match="cannot open the conversation store"):
        ConversationStore(bad)


def test_two_connections_see_each_other(tmp_path):
    with ConversationStore(tmp_path / "c.sqlite3") as one, ConversationStore(tmp_path / "c.sqlite3") as two:
        cid = fill(one)
        two.rename(cid, "renamed elsewhere")
        assert one.get(cid).title == "renamed elsewhere"


# ---- export ------------------------------------------------------------------------------------------------------

def test_markdown_export_shows_the_conversation(store):
    conv = store.get(fill(store), turns=True)
    md = render(conv, "md")
    assert md.startswith("# Fix the build\n")
    assert "## You\n\nFix the build\nthen more" in md
    assert "### Tool call: read_file" in md and '"path": "a.txt"' in md
    assert "### Tool result: read_file\n\n````\nhello ``` world\n````" in md  # a longer fence than the content's
    assert "## Assistant\n\nIt says hello." in md and "> be brief" in md


def test_json_export_is_the_whole_conversation(store):
    conv = store.get(fill(store), turns=True)
    data = json.loads(render(conv, "json"))
    assert data["format"] == "localspec-conversation" and data["id"] == conv.id
    assert len(data["messages"]) == 4 and data["turns"][0]["steps"] == 2


def test_export_paths(store, home, tmp_path):
    conv = store.get(fill(store))
    first = export(conv, "md")
    assert first.parent == home / "data" / "exports" and first.name == f"fix-the-build-{conv.id}.md"
    second = export(conv, "md")
    assert second != first and second.name.endswith("-2.md") and first.exists()  # never replaced
    assert available_path(first) == first.with_name(first.stem + "-3.md")
    target = tmp_path / "out" / "mine.json"
    assert export(conv, "json", target) == target and json.loads(target.read_text())["id"] == conv.id
    with pytest.raises(ExportExists, match="already exists"):
        export(conv, "json", target)
    export(conv, "json", target, overwrite=True)
    folder = tmp_path / "folder"
    folder.mkdir()
    assert export(conv, "md", folder).parent == folder
    with pytest.raises(ConversationError, match="format"):
        export(conv, "html")


# ---- recording an agent ------------------------------------------------------------------------------------------

def test_recorder_saves_each_message_of_a_real_agent_run(tiny_target, tmp_path):
    from localspec.agent import Agent
    from localspec.agent.record import ConversationRecorder
    from localspec.runtime.context import ContextSettings
    from localspec.runtime.pair import load_pair
    from localspec.speculative.builder import build_engine
    from localspec.speculative.decoder import GenParams
    from localspec.speculative.drafting import TARGET_ONLY
    from localspec.tools import Policy, Toolbox

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("hello\n")
    pair = load_pair(tiny_target, None, ctx=ContextSettings(n_ctx=4096, n_threads=1))
    try:
        engine = build_engine(pair, TARGET_ONLY)
        agent = Agent(engine, Toolbox(ws, Policy("read-only")), system="sys", params=GenParams(max_tokens=6),
                      max_steps=2, tools=["list_dir"], call_max_tokens=24)
        with ConversationStore(tmp_path / "c.sqlite3") as store:
            seen = []
            recorder = ConversationRecorder(store, meta=lambda: {"pair": "tiny", "workspace": str(ws),
                                                                 "system": "sys", "params": {"max_tokens": 6}})
            result = agent.run("list the files please", tool_choice="required", on_event=recorder.wrap(seen.append))
            assert recorder.error is None and recorder.id is not None
            assert any(ev.type == "message" for ev in seen)  # the wrapped handler still gets every event
            conv = store.get(recorder.id, turns=True)
            assert conv.title == "list the files please" and conv.pair == "tiny"
            assert conv.messages == agent.messages[1:]  # everything after the system prompt, as the agent has it
            assert [m["role"] for m in conv.messages][:3] == ["user", "assistant", "tool"]
            stats = store.message_stats(recorder.id)
            assert stats[1]["generated_tokens"] > 0  # the step's statistics ride with its assistant message
            assert conv.turns == [dict(conv.turns[0], finish_reason=result.finish_reason, steps=result.steps)]
            assert conv.turns[0]["stats"]["generated_tokens"] == result.stats.generated_tokens

            # A second turn goes into the same conversation; a deleted conversation stops the recording quietly.
            agent.run("and again", tool_choice="none", on_event=recorder)
            assert store.get(recorder.id).message_count == len(agent.messages) - 1
            store.delete(recorder.id)
            agent.run("one more", tool_choice="none", on_event=recorder)
            assert recorder.error and "deleted" in recorder.error
    finally:
        pair.close()


# -- issue 38.6: a deleted message leaves no row anywhere ---------------------------------------------------------
def _rows_holding(path, needle: str) -> list[str]:
    """Every row of every table of the database whose text holds `needle`: (table, row) as text."""
    db = sqlite3.connect(path)
    try:
        found = []
        for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            for row in db.execute(f"SELECT * FROM {table}").fetchall():
                if needle in " ".join(str(v) for v in row):
                    found.append(f"{table}: {row!r:.120}")
        return found
    finally:
        db.close()


def test_a_deleted_message_leaves_no_row_anywhere(tiny_target, tmp_path):
    """A real agent recording as the app does (its calls kept for history drafting, its generations for recall),
    then the app's edit/regenerate/delete (delete_messages) and `sessions delete` (delete): nothing of a deleted
    message stays in messages, calls or generations, so recall and serve never draft from it again."""
    from localspec.agent import Agent
    from localspec.agent.drafting_memory import StoredGenerations, call_history
    from localspec.agent.record import ConversationRecorder
    from localspec.runtime.context import ContextSettings
    from localspec.runtime.pair import load_pair
    from localspec.speculative.builder import build_engine
    from localspec.speculative.decoder import GenParams
    from localspec.speculative.drafting import DraftingConfig
    from localspec.tools import Policy, Toolbox

    ws = tmp_path / "ws"
    ws.mkdir()
    path = tmp_path / "c.sqlite3"
    pair = load_pair(tiny_target, None, ctx=ContextSettings(n_ctx=4096, n_threads=1))
    try:
        with ConversationStore(path) as store:
            recorder = ConversationRecorder(store)
            cid = lambda: recorder.id  # noqa: E731
            engine = build_engine(pair, DraftingConfig(drafters=("history", "ngram")),
                                  history=call_history(store, cid), generations=StoredGenerations(store, cid))
            agent = Agent(engine, Toolbox(ws, Policy("auto")), system="sys", params=GenParams(max_tokens=6),
                          max_steps=2, tools=["list_dir"], call_max_tokens=24)

            def exchange(text: str) -> None:
                agent.run(text, tool_choice="required", on_event=recorder)
                assert recorder.error is None

            exchange("keep this one KEEP-1")
            kept_calls, kept_generations = store.recent_calls(), store.recent_generations()
            assert kept_calls and kept_generations  # the first exchange is remembered
            exchange("DB_PASSWORD=hunter2 write it down")
            exchange("and then SECRET-3")
            assert _rows_holding(path, "hunter2") and len(store.recent_calls()) > len(kept_calls)
            assert len(store.recent_generations()) > len(kept_generations)

            # The app's "delete" of the second exchange and everything after it (regenerate, edit: the same).
            messages = store.messages(recorder.id)
            second = next(i for i, m in enumerate(messages) if "hunter2" in str(m.get("content")))
            store.delete_messages(recorder.id, second)
            assert _rows_holding(path, "hunter2") == [] and _rows_holding(path, "SECRET-3") == []
            assert store.recent_calls() == kept_calls and store.recent_generations() == kept_generations
            assert _rows_holding(path, "KEEP-1")  # what was not deleted stays

            # `sessions delete`: the conversation and every row tied to it.
            exchange("once more ANOTHER-4")
            store.delete(recorder.id)
            for needle in ("KEEP-1", "ANOTHER-4"):
                assert _rows_holding(path, needle) == []
            assert store.recent_calls() == [] and store.recent_generations() == []
    finally:
        pair.close()


def test_deleting_messages_kept_before_schema_4_goes_by_time(tmp_path):
    """Calls and generations from before schema 4 name no message: those kept after the last kept message go."""
    path = tmp_path / "c.sqlite3"
    with ConversationStore(path) as store:
        cid = store.create()
        store.add_message(cid, {"role": "user", "content": "first"})
        store.add_generation(cid, "first", "old reply")
        store.add_message(cid, {"role": "assistant", "content": "old reply"})
        store.add_message(cid, {"role": "user", "content": "second"})
        store.add_call(cid, '{"name": "write_file", "arguments": {"content": "LEGACY-SECRET"}}', "write_file")
        store.add_generation(cid, "second", "LEGACY-SECRET reply")
        store.add_message(cid, {"role": "assistant", "content": "LEGACY-SECRET reply"})
    db = sqlite3.connect(path)
    db.execute("UPDATE calls SET after_message = NULL")
    db.execute("UPDATE generations SET after_message = NULL")
    db.commit()
    db.close()
    with ConversationStore(path) as store:
        assert store.delete_messages(cid, 2) == 2
        assert [g["output"] for g in store.recent_generations()] == ["old reply"] and store.recent_calls() == []
    assert _rows_holding(path, "LEGACY-SECRET") == []
