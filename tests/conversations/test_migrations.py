"""The conversation store's schema versions: a database of every earlier version opens, upgraded in place with its
conversations intact; a newer one is refused in one line. And the tool-call history that lives there since
version 2: bounded, tied to its conversation, kept only for recorded conversations."""

from __future__ import annotations

import json
import sqlite3

import pytest

from localspec.agent.drafting_memory import StoredGenerations, call_history, legacy_history_file
from localspec.conversations import ConversationError, ConversationStore
from localspec.conversations import store as store_module
from localspec.conversations.migrations import SCHEMA_VERSION, UPGRADES, V1, upgrade


def _v1_database(path) -> None:
    """A database exactly as localspec wrote it before version 2 (version 1's own DDL, a conversation in it)."""
    db = sqlite3.connect(path)
    db.executescript(V1)
    db.execute("INSERT INTO conversations (id, title, created, updated, pair, workspace, system, params) "
               "VALUES ('c0ffee00', 'list the files', 1.0, 2.0, 'smollm2', '/w', 'be brief', '{\"max_steps\": 8}')")
    for role, content in (("user", "list the files"), ("assistant", "a.txt")):
        db.execute("INSERT INTO messages (conversation, role, content, data, stats, created) VALUES (?, ?, ?, ?, ?, ?)",
                   ("c0ffee00", role, content, json.dumps({"role": role, "content": content}), None, 1.5))
    db.execute("INSERT INTO turns (conversation, finish_reason, steps, error, stats, created) "
               "VALUES ('c0ffee00', 'stop', 1, NULL, NULL, 2.0)")
    db.execute("PRAGMA user_version=1")
    db.commit()
    db.close()


def test_every_version_has_an_upgrade():
    assert sorted(UPGRADES) == list(range(SCHEMA_VERSION))


def test_a_version_1_database_is_upgraded_with_its_conversations(tmp_path):
    path = tmp_path / "conversations.sqlite3"
    _v1_database(path)
    with ConversationStore(path) as store:
        conv = store.get("c0ffee", turns=True)
        assert (conv.title, conv.pair, conv.system, conv.params) == ("list the files", "smollm2", "be brief",
                                                                     {"max_steps": 8})
        assert [m["content"] for m in conv.messages] == ["list the files", "a.txt"]
        assert conv.turns[0]["finish_reason"] == "stop"
        store.add_call("c0ffee00", '{"name": "list_dir"}', "list_dir")  # the new table is there
        assert store.recent_calls() == ['{"name": "list_dir"}']
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    db.close()


def test_a_new_database_and_an_upgraded_one_have_the_same_tables(tmp_path):
    _v1_database(tmp_path / "old.sqlite3")
    ConversationStore(tmp_path / "old.sqlite3").close()
    ConversationStore(tmp_path / "new.sqlite3").close()

    def tables(path):
        db = sqlite3.connect(path)
        rows = db.execute("SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' "
                          "ORDER BY name").fetchall()
        db.close()
        return rows

    assert tables(tmp_path / "old.sqlite3") == tables(tmp_path / "new.sqlite3")


def test_an_upgrade_that_fails_leaves_the_version_before_it(tmp_path, monkeypatch):
    path = tmp_path / "c.sqlite3"
    _v1_database(path)

    def broken(db):
        db.execute("CREATE TABLE half_done (x)")
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setitem(UPGRADES, 1, broken)
    with pytest.raises(ConversationError, match="disk I/O error"):
        ConversationStore(path)
    db = sqlite3.connect(path, isolation_level=None)
    assert db.execute("PRAGMA user_version").fetchone()[0] == 1
    assert db.execute("SELECT name FROM sqlite_master WHERE name = 'half_done'").fetchone() is None
    monkeypatch.undo()
    assert upgrade(db) == 1 and db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION  # retried later
    db.close()


def test_a_newer_database_is_refused_in_one_line(tmp_path):
    path = tmp_path / "c.sqlite3"
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(ConversationError, match=r"written by a newer localspec") as err:
        ConversationStore(path)
    assert "\n" not in str(err.value)


# --- the tool-call history -----------------------------------------------------------------------------------------
@pytest.fixture
def store(tmp_path):
    with ConversationStore(tmp_path / "conversations.sqlite3") as s:
        yield s


def test_calls_are_kept_with_their_conversation_and_deleted_with_it(store):
    one, two = store.create(title="one"), store.create(title="two")
    current = [one]
    history = call_history(store, lambda: current[0])
    history.add('{"name": "read_file", "arguments": {"path": "a"}}', "read_file")
    current[0] = two
    history.add('{"name": "write_file", "arguments": {"path": "b", "content": "secret"}}', "write_file")
    assert call_history(store).calls == ['{"name": "read_file", "arguments": {"path": "a"}}',
                                         '{"name": "write_file", "arguments": {"path": "b", "content": "secret"}}']
    store.delete(two)  # `localspec sessions delete`: everything kept about it goes
    assert store.recent_calls() == ['{"name": "read_file", "arguments": {"path": "a"}}']


def test_a_run_that_saves_nothing_keeps_no_calls(store):
    cid = store.create()
    history = call_history(store, lambda: None)  # recording is off, or the conversation is not created yet
    history.add("call", "t")
    assert history.calls == ["call"] and store.recent_calls() == []  # learnt in memory only
    call_history(store).add("call 2", "t")  # no conversation to tie it to: kept in memory only
    assert store.recent_calls() == [] and cid


def test_the_history_is_bounded_by_count_and_characters(store, monkeypatch):
    cid = store.create()
    monkeypatch.setattr(store_module, "HISTORY_CALLS", 3)
    for i in range(5):
        store.add_call(cid, f"call {i}")
    assert store.recent_calls() == ["call 2", "call 3", "call 4"]
    monkeypatch.setattr(store_module, "HISTORY_CHARS", 26)
    store.add_call(cid, "x" * 20)
    assert store.recent_calls() == ["call 4", "x" * 20]  # 20 + 6 fit in 26 characters; with "call 3" they would not
    assert store.recent_calls(limit=1) == ["x" * 20]


def test_the_old_unbounded_history_file_is_removed(tmp_path, monkeypatch, store):
    monkeypatch.setenv("LOCALSPEC_HOME", str(tmp_path / "home"))
    old = legacy_history_file()
    old.parent.mkdir(parents=True)
    old.write_text(json.dumps({"tool": "write_file", "text": "the full text of a file", "ts": 1.0}) + "\n")
    assert call_history(store).calls == []
    assert not old.exists() and not old.parent.exists()


def test_reading_the_history_never_creates_the_store(tmp_path, monkeypatch):
    monkeypatch.setenv("LOCALSPEC_HOME", str(tmp_path / "home"))
    assert call_history().calls == []
    assert not (tmp_path / "home" / "data" / "conversations.sqlite3").exists()


# --- the generations recall drafts again ---------------------------------------------------------------------------
def test_generations_are_kept_with_their_conversation_bounded_and_deleted_with_it(store, monkeypatch):
    one, two = store.create(title="one"), store.create(title="two")
    current = [one]
    log = StoredGenerations(store, lambda: current[0])
    log.append("<user>hi<assistant>", "Hello there.", [1, 2, 3], "v1")
    current[0] = two
    log.append("<user>again<assistant>", "A secret reply.")
    assert log.read() == [{"prompt": "<user>hi<assistant>", "output": "Hello there.", "vocab": "v1",
                           "tokens": [1, 2, 3]},
                          {"prompt": "<user>again<assistant>", "output": "A secret reply."}]
    store.delete(two)  # `localspec sessions delete`: its generations go with it
    assert [r["output"] for r in store.recent_generations()] == ["Hello there."]
    current[0] = None  # recording off: nothing kept
    log.append("p", "not kept")
    assert len(store.recent_generations()) == 1
    monkeypatch.setattr(store_module, "GENERATION_CHARS", 30)
    for i in range(4):
        store.add_generation(one, "p", f"reply {i} " + "x" * 5)  # 15 characters each with its prompt
    assert [r["output"] for r in store.recent_generations()] == ["reply 2 xxxxx", "reply 3 xxxxx"]
