"""Record an agent conversation in the conversation store as it happens: an event handler for Agent.run.

One store write per message the agent adds (user, assistant, tool), so a crash loses at most the reply being
generated. The step's statistics ride along with the assistant message that step wrote; each finished turn adds a
row with its merged statistics and finish reason. The conversation is created on its first message (an app opened
and closed without a word leaves nothing behind). Recording never breaks a turn: the first store error is kept in
`error` for the UI to show, and recording stops.
"""

from __future__ import annotations

from typing import Callable

from localspec.conversations import ConversationError, ConversationStore, open_store

Meta = Callable[[], dict]  # pair, workspace, system, params as they are now


class ConversationRecorder:
    def __init__(self, store: ConversationStore, conversation_id: str | None = None, *, meta: Meta | None = None):
        self.store = store
        self.id = conversation_id
        self.meta = meta or dict
        self.error: str | None = None
        self._step_stats: dict | None = None

    def __call__(self, ev) -> None:
        if self.error is not None:
            return
        try:
            kind = ev.type
            if kind == "message":
                self._message(ev.message)
            elif kind == "stats":
                self._step_stats = ev.stats.to_dict()
            elif kind == "done":
                r = ev.result
                if self.id is not None:
                    self.store.add_turn(self.id, finish_reason=r.finish_reason, steps=r.steps, error=r.error,
                                        stats=r.stats.to_dict())
        except ConversationError as exc:
            self.error = str(exc)

    def close(self) -> None:
        self.store.close()

    def wrap(self, handler: Callable | None) -> Callable:
        """An on_event handler that records, then passes the event on."""
        def both(ev) -> None:
            self(ev)
            if handler is not None:
                handler(ev)
        return both

    def _message(self, message: dict) -> None:
        meta = self.meta()
        if self.id is None:
            self.id = self.store.create(**meta)
            meta = {}
        elif message.get("role") != "user":
            meta = {}  # settings can only change between turns: refresh them with the user's message
        stats, self._step_stats = (self._step_stats, None) if message.get("role") == "assistant" else (None, None)
        self.store.add_message(self.id, message, stats=stats, meta=meta)


def open_recorder(conversation_id: str | None = None, *,
                  meta: Meta | None = None) -> tuple[ConversationRecorder | None, str | None]:
    """A recorder on the user's store, or (None, why) when the store cannot be opened: a run goes on without it."""
    try:
        store = open_store()
    except ConversationError as exc:
        return None, str(exc)
    return ConversationRecorder(store, conversation_id, meta=meta), None
