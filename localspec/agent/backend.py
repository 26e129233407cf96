"""What generates a session's turns, opened and warmed up the one way every front end does it: a local pair and its
engine (launch/open.py), or an OpenAI-compatible server (remote/turns.py). The app, `run --tools` and `serve` open theirs
here, and say what runs and save it with a conversation in the same words (PairInfo, Backend.meta).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from localspec.launch.backend_choice import RemoteConfig
from localspec.launch.open import Opened, open_engine
from localspec.launch.run_config import RunConfig
from localspec.models.selection import Selection
from localspec.prompting.prompt import chat_prompt_tokens
from localspec.remote.turns import RemoteTurns, open_turns
from localspec.speculative import CallHistory, GenerationLog, GrammarConstraint, json_schema_grammar


@dataclass(frozen=True)
class PairInfo:
    """What a front end shows about the loaded pair."""

    label: str
    target: Path | None  # None: a remote server generates
    draft: Path | None
    pair: str | None
    demo: bool
    warning: str | None = None  # e.g. no chat template: ChatML stands in (shown in the chat once loaded)
    remote: str | None = None  # the server's API root when an OpenAI-compatible server generates
    model: str | None = None  # the server's model when one generates


def describe(sel: Selection, warning: str | None = None) -> PairInfo:
    label = "demo" if sel.demo else sel.pair or sel.target.name
    if sel.pair is None and sel.draft is not None:
        label += " + " + sel.draft.name
    return PairInfo(label, sel.target, sel.draft, sel.pair, sel.demo, warning)


def describe_remote(turns: RemoteTurns) -> PairInfo:
    return PairInfo(turns.label, None, None, None, False, remote=turns.backend.base_url, model=turns.backend.model)


@dataclass
class Backend:
    """A local pair (`opened`) or a remote server's turns (`remote`): exactly one of them."""

    info: PairInfo
    opened: Opened | None = None
    remote: RemoteTurns | None = None

    @property
    def turns(self):
        """What the agent runs its turns on: the local engine, or the remote server's turn provider."""
        return self.opened.engine if self.opened is not None else self.remote

    @property
    def engine(self):
        return self.opened.engine if self.opened is not None else None

    @property
    def pair(self):
        return self.opened.pair if self.opened is not None else None

    @property
    def config(self) -> RunConfig | None:
        return self.opened.config if self.opened is not None else None

    def warm_up(self, messages: Sequence[dict] = (), tools: list[dict] | None = None) -> None:
        """See warm_up(); a server has nothing of it to pay here."""
        if self.opened is not None:
            warm_up(self.opened.pair.target, messages, tools)

    def meta(self) -> dict:
        """How a saved conversation names what ran it, the same from every front end: its `pair` column and the
        part of its params that say which files or which server (the app reopens a conversation on them)."""
        info = self.info
        if info.remote is not None:
            return {"pair": info.label, "params": {"pair_name": None, "target": None, "draft": None,
                                                   "backend": "openai", "base_url": info.remote,
                                                   "model": info.model}}
        return {"pair": info.pair or info.label,
                "params": {"pair_name": info.pair, "target": str(info.target) if info.target else None,
                           "draft": str(info.draft) if info.draft else None}}

    def close(self) -> None:
        """Free the models (a server's connection is per request: nothing to close)."""
        if self.opened is not None:
            self.opened.close()


def warm_up(model, messages: Sequence[dict] = (), tools: list[dict] | None = None) -> None:
    """Pay one-off costs now, while the front end says "loading", not in the middle of the first reply: the chat
    template's compilation and the grammar engine's tokenizer for this model (about 0.25 s for SmolLM2, spent in native
    code that holds the interpreter lock, so the app's screen would freeze for that long, and a server's first request
    would wait for it)."""
    chat_prompt_tokens(model, [*messages, {"role": "user", "content": "hi"}], tools=tools or None)
    GrammarConstraint(model, json_schema_grammar(None))


def open_local(config: RunConfig, *, history: CallHistory | None = None,
               generations: GenerationLog | None = None) -> Backend:
    """The config's pair and engine. `history`: the stored tool calls to draft from, used only where the history
    drafter is on (off, the user asked for no drafting from earlier calls); `generations`: where recall keeps what is
    generated (agent/drafting_memory.py)."""
    if "history" not in config.drafting.drafters:
        history = None
    opened = open_engine(config, history=history, generations=generations)
    return Backend(describe(config.selection, opened.warning), opened=opened)


def connect(remote: RemoteConfig) -> RemoteTurns:
    """Turns on an OpenAI-compatible server, asked for its model now: an unreachable server is said at once, not at
    the first message, and a conversation is saved under the model that answers."""
    turns = open_turns(remote)
    turns.backend.resolve_model()
    return turns


def open_remote(remote: RemoteConfig) -> Backend:
    turns = connect(remote)
    return Backend(describe_remote(turns), remote=turns)
