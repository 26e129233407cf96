"""What drafting remembers of earlier sessions, kept in the conversation store: the tool-call history every front
end (run, serve, the app) drafts from, and the generations recall drafts again (StoredGenerations).

Each call and generation is kept with the conversation it came from (conversations/store.py: HISTORY_CALLS,
HISTORY_CHARS and GENERATION_CHARS bound them; `localspec sessions delete` deletes them with their conversation).

Only a recorded conversation adds to them: a run that saves nothing (`--no-transcript`, the server, an app that
cannot open the store) still drafts from the stored calls and learns from its own in memory, and keeps nothing.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Callable, Sequence

from localspec.conversations import ConversationError, ConversationStore, default_db_path, open_store
from localspec.models.paths import get_paths
from localspec.speculative import CallHistory


def legacy_history_file() -> Path:
    """Where localspec before the store's schema 2 kept every call, unbounded and tied to nothing."""
    return get_paths().data_dir / "history" / "tool_calls.jsonl"


def call_history(store: ConversationStore | None = None,
                 conversation: Callable[[], str | None] | None = None) -> CallHistory:
    """The stored calls (the newest ones, bounded), and, when `conversation` names the recorded conversation at
    the time of a call, that call added to the store under it. Without `store`, the user's store is read once."""
    _forget_legacy_file()
    try:
        if store is not None:
            calls = store.recent_calls()
        elif default_db_path().exists():  # reading must not create the store: `--no-transcript` saves nothing
            with open_store() as own:
                calls = own.recent_calls()
        else:
            calls = []
    except ConversationError:  # no readable store: drafting starts without earlier calls
        calls = []

    def keep(text: str, tool: str | None) -> None:
        cid = conversation() if conversation is not None else None
        if store is None or cid is None:
            return
        with contextlib.suppress(ConversationError):  # a drafting hint is not worth failing a turn over
            store.add_call(cid, text, tool)

    return CallHistory(calls, on_add=keep if store is not None and conversation is not None else None)


class StoredGenerations:
    """The generations recall drafts again (speculative/sources/recall.py: GenerationLog), kept in the store with
    the conversation `conversation()` names when each finishes (none: not kept); read back by the next process."""

    def __init__(self, store: ConversationStore, conversation: Callable[[], str | None]):
        self.store, self.conversation = store, conversation

    def read(self) -> list[dict]:
        try:
            return self.store.recent_generations()
        except ConversationError:  # an unreadable store: recall starts empty
            return []

    def append(self, prompt: str, output: str, tokens: Sequence[int] = (), vocab: str = "") -> None:
        cid = self.conversation()
        if cid is None:
            return
        with contextlib.suppress(ConversationError):  # a drafting hint is not worth failing a turn over
            self.store.add_generation(cid, prompt, output, vocab, tokens)


def _forget_legacy_file() -> None:
    """The old file held the full text of every call (files the agent wrote included) and no conversation to
    delete it with: it goes, and its folder if nothing else is there."""
    path = legacy_history_file()
    with contextlib.suppress(OSError):
        path.unlink()
        path.parent.rmdir()
