"""A plain `localspec run`'s conversation (no tools): the one it carries on (--continue, --resume ID), the
messages the model is given, and its record in the conversation store.

The record is written the way `run --tools` writes its own: the same recorder (agent/record.py), fed the agent's
events for one step (the user's message, the step's statistics, the reply, the finished turn), so `localspec
sessions`, the app and `run --tools --continue` read a plain run's conversation like any other. `--no-transcript`
saves nothing; `--raw` is no chat (the prompt goes to the model as it is) and saves nothing either.
"""

from __future__ import annotations

import sys

from localspec.agent.events import Done, MessageAdded, StepStats
from localspec.agent.outcome import AgentResult
from localspec.conversations import find_saved
from localspec.errors import ConfigError
from localspec.speculative import Stats
from localspec.terminal import safe_text

# What a plain run says of its settings in the store (beside the pair): the rest of a continued conversation's
# settings (the app's approval mode, its tools switch, a workspace) are left as they were.
RUN_PARAMS = ("pair_name", "target", "draft", "backend", "base_url", "model", "temperature", "max_tokens")


class SavedChat:
    def __init__(self, args, *, raw: bool = False):
        carry_on = bool(args.resume or args.continue_last)
        if raw and carry_on:
            raise ConfigError("--raw sends the prompt as it is, without the chat template: it cannot carry on a "
                              "conversation (leave out --raw)")
        self.conv = find_saved(args.resume, args.continue_last) if carry_on else None  # before the model loads
        system = args.system if args.system is not None else (self.conv.system if self.conv else None)
        self.system = system or None  # --system "" means none
        self.recorder = None if raw or args.no_transcript else _open_recorder(self.conv.id if self.conv else None)
        self.result = AgentResult(steps=1)

    @property
    def id(self) -> str | None:
        return self.recorder.id if self.recorder is not None else None

    def messages(self, prompt: str) -> list[dict]:
        """The conversation so far, then the new message: what the model answers."""
        system = [{"role": "system", "content": self.system}] if self.system else []
        earlier = [dict(m) for m in (self.conv.messages or [])] if self.conv is not None else []
        return system + earlier + [{"role": "user", "content": prompt}]

    def drafting_memory(self):
        """(call history, generations) kept with this conversation, as `run --tools` keeps them: recall drafts a
        continued conversation from what it wrote before. (None, None) when nothing is recorded."""
        if self.recorder is None:
            return None, None
        from localspec.agent.drafting_memory import StoredGenerations, call_history

        store, recorder = self.recorder.store, self.recorder
        return call_history(store, lambda: recorder.id), StoredGenerations(store, lambda: recorder.id)

    def start(self, prompt: str, pair: str | None, params: dict) -> None:
        """Record the user's message (the conversation is created with it), with the settings the run uses."""
        if self.recorder is None:
            return
        conv = self.conv
        if conv is None:
            meta = {"pair": pair, "workspace": None, "system": self.system, "params": {**params, "tools": False}}
        else:
            kept = {k: v for k, v in (conv.params or {}).items() if k not in RUN_PARAMS}
            meta = {"pair": pair, "workspace": conv.workspace, "system": self.system, "params": {**kept, **params}}
        self.recorder.meta = lambda: meta
        self.recorder(MessageAdded({"role": "user", "content": prompt}))

    def finish(self, text: str, reasoning: str, stats: Stats | None, finish_reason: str, *,
               cancelled: bool = False) -> None:
        """Record the reply (a cancelled one marked, as the app and `run --tools` mark it) and the turn."""
        if self.recorder is None:
            return
        reply: dict = {"role": "assistant", "content": text.strip()}  # as a message keeps it (turns/result.py)
        if reasoning:
            reply["reasoning_content"] = reasoning.strip()
        if cancelled:
            reply["cancelled"] = True
        stats = stats or Stats()
        self.result.stats, self.result.finish_reason = stats, "cancelled" if cancelled else finish_reason
        self.recorder(StepStats(1, stats))
        self.recorder(MessageAdded(reply))
        self.recorder(Done(self.result))

    def saved_note(self) -> str:
        """"; saved as ID" for the summary line (empty when nothing was saved)."""
        return f"; saved as {self.id}" if self.id else ""

    def close(self) -> None:
        if self.recorder is None:
            return
        self.recorder.close()
        if self.recorder.error:
            print(f"warning: the conversation was not saved completely: {safe_text(self.recorder.error, 500)}",
                  file=sys.stderr)


def _open_recorder(conversation_id: str | None):
    """The recorder on the user's store; a store that cannot be opened is a warning, and the run goes on."""
    from localspec.agent.record import open_recorder

    recorder, why = open_recorder(conversation_id)
    if why:
        print(f"warning: the conversation will not be saved: {safe_text(why, 500)}", file=sys.stderr)
    return recorder
