"""Editing a conversation in exchanges, the history and its saved copy together (conversations/editing.py)."""

from __future__ import annotations

import pytest

from localspec.conversations import ConversationStore
from localspec.conversations import editing
from localspec.conversations.editing import NoSuchExchange, SavedCopy

SYSTEM = {"role": "system", "content": "be brief"}


def conversation(tmp_path, *questions: str, system: bool = True):
    store = ConversationStore(tmp_path / "c.sqlite3")
    cid = store.create(system="be brief" if system else None)
    history = [SYSTEM] if system else []
    for q in questions:
        for message in ({"role": "user", "content": q}, {"role": "assistant", "content": f"re: {q}"}):
            store.add_message(cid, message)
            history.append(message)
    return store, cid, history


def saved_questions(store, cid) -> list[str]:
    return [m["content"] for m in store.messages(cid) if m["role"] == "user"]


@pytest.mark.parametrize("system", [True, False])
def test_exchanges_are_a_question_and_its_whole_reply(tmp_path, system):
    _, _, history = conversation(tmp_path, "one", "two", system=system)
    history.insert(len(history) - 2, {"role": "tool", "tool_call_id": "c1", "content": "tool result"})
    first = 1 if system else 0
    assert editing.user_positions(history) == [first, first + 3]
    assert editing.exchange(history, 0) == (first, first + 3)  # the question, the reply, the tool result
    assert editing.exchange(history, -1) == (first + 3, first + 5)
    for k in (2, -3):
        with pytest.raises(NoSuchExchange):
            editing.exchange(history, k)


def test_take_back_and_delete_change_the_saved_copy_too(tmp_path):
    store, cid, history = conversation(tmp_path, "one", "two", "three")
    saved = SavedCopy(store, cid)
    assert editing.take_back(history, -1, saved) == ("three", None)
    assert saved_questions(store, cid) == ["one", "two"] and history[1:] == store.messages(cid)
    assert editing.delete_exchange(history, 0, saved) == (2, None)
    assert saved_questions(store, cid) == ["two"] and history == [SYSTEM, *store.messages(cid)]


def test_an_unsaved_conversation_is_edited_alone(tmp_path):
    _, _, history = conversation(tmp_path, "one", "two")
    assert editing.delete_exchange(history, -1, None) == (2, None)
    assert [m["content"] for m in history] == ["be brief", "one", "re: one"]


def test_the_title_follows_the_first_question_unless_the_user_gave_one(tmp_path):
    store, cid, history = conversation(tmp_path, "first question", "second question", "third")
    saved = SavedCopy(store, cid)
    assert store.get(cid).title == "first question"
    editing.delete_exchange(history, 0, saved)
    assert store.get(cid).title == "second question"  # made from the question that went: it follows
    store.rename(cid, "my weather chat")
    editing.delete_exchange(history, 0, saved)
    assert store.get(cid).title == "my weather chat"  # the user's own stays


def test_a_store_that_fails_is_reported_and_the_history_still_changes(tmp_path):
    store, cid, history = conversation(tmp_path, "one", "two")
    saved = SavedCopy(store, "gone-id")  # no such conversation: the store refuses
    store.close()
    gone, error = editing.delete_exchange(history, 0, saved)
    assert gone == 2 and error and [m["content"] for m in history] == ["be brief", "two", "re: two"]


def test_deleting_the_only_question_takes_its_title_too(tmp_path):
    """Found on a newcomer's walk: the chat kept the deleted question as its title (export name, sessions, F4)."""
    store, cid, history = conversation(tmp_path, "Count from 1 to 10.")
    saved = SavedCopy(store, cid)
    editing.delete_exchange(history, 0, saved)
    assert store.get(cid).title == ""
    store.add_message(cid, {"role": "user", "content": "Say hi."})
    assert store.get(cid).title == "Say hi."  # the next question names it
