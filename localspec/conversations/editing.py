"""Editing a conversation as the user sees it, in exchanges: a user message and every message of the reply to it.

Regenerate takes the last exchange back and sends its question again, edit takes an earlier one back (and all after
it) and sends the changed text, delete removes one exchange: what the model sees stays a valid conversation (no
reply without its question, no tool result without its call). Each edit changes the history the agent holds and the
saved copy in the store together, so a reopened conversation is the one the user left.
"""

from __future__ import annotations

from localspec.conversations.store import ConversationError, ConversationStore, title_from
from localspec.errors import LocalspecError


class NoSuchExchange(LocalspecError):
    """The exchange asked for is not in the conversation."""


def user_positions(history: list[dict]) -> list[int]:
    """Where the user's messages are in the history."""
    return [i for i, m in enumerate(history) if m.get("role") == "user"]


def exchange(history: list[dict], k: int) -> tuple[int, int]:
    """The history span of the k-th exchange (0-based; negative from the end): its user message and every message
    of the reply, up to the next user message."""
    users = user_positions(history)
    if not users or not -len(users) <= k < len(users):
        raise NoSuchExchange("there is no such message in this conversation")
    k %= len(users)
    stop = users[k + 1] if k + 1 < len(users) else len(history)
    return users[k], stop


class SavedCopy:
    """Where a conversation is saved: the store and its ID (an unsaved conversation has none of these)."""

    def __init__(self, store: ConversationStore, cid: str):
        self.store, self.cid = store, cid

    def remove(self, history: list[dict], start: int, stop: int) -> None:
        """The store keeps the system prompt apart from the messages: positions shift by one where there is one."""
        offset = 1 if history and history[0].get("role") == "system" else 0
        self.store.delete_messages(self.cid, start - offset, stop - offset)

    def retitle(self, first_before: str, first_now: str | None) -> None:
        """The first question went: a title made from it follows the new first one, or goes with the last question
        (the next one names the chat: a deleted question's text stays nowhere); a title the user gave stays."""
        title = self.store.get(self.cid, messages=False).title
        if title != title_from(first_before):
            return
        if first_now:
            self.store.rename(self.cid, title_from(first_now))
        else:
            self.store.untitle(self.cid)


def remove(history: list[dict], start: int, stop: int | None, saved: SavedCopy | None) -> str | None:
    """Delete history[start:stop] from the saved copy (when there is one), then from the history. Returns the store's
    error when the saved copy could not be changed (the history changes anyway: the conversation on screen and the
    model's view stay one)."""
    end = len(history) if stop is None else stop
    first_before = _first_question(history)
    error = None
    if saved is not None:
        try:
            saved.remove(history, start, end)
        except ConversationError as exc:
            error = str(exc)
    del history[start:end]
    first_now = _first_question(history)
    if saved is not None and error is None and first_before is not None and first_now != first_before:
        try:
            saved.retitle(first_before, first_now)
        except ConversationError as exc:
            error = str(exc)
    return error


def _first_question(history: list[dict]) -> str | None:
    return next((str(m.get("content") or "") for m in history if m.get("role") == "user"), None)


def take_back(history: list[dict], k: int, saved: SavedCopy | None) -> tuple[str, str | None]:
    """Remove the k-th exchange and everything after it. Returns its user message's text (regenerate sends it again,
    edit sends it changed) and the store's error, if any."""
    start, _ = exchange(history, k)
    text = str(history[start].get("content") or "")
    return text, remove(history, start, None, saved)


def delete_exchange(history: list[dict], k: int, saved: SavedCopy | None) -> tuple[int, str | None]:
    """Delete the k-th exchange (its user message and the reply to it). Returns how many messages went and the
    store's error, if any."""
    start, stop = exchange(history, k)
    return stop - start, remove(history, start, stop, saved)
