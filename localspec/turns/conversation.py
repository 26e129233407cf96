"""A turn from a conversation: what the agent loop asks of a model, whichever runs it.

`ChatTurns` renders the messages with the model's own chat template and runs the local turn engine; the remote
backend (remote/turns.py) answers the same call with an OpenAI-compatible server. The agent holds one of them and
does not care which (`TurnProvider`).

Here too: the system prompt and tool definitions every chat with these tools starts with are marked as a prefix
worth keeping (runtime/prefixes.py: computed once, saved to disk, restored by later chats and restarts), and the
time to the first token is measured from the moment the turn starts, rendering included: what the user waits.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol, Sequence

from localspec.prompting import thinking as think
from localspec.prompting.prompt import chat_prompt_tokens, stable_prefix, tool_format
from localspec.turns.engine import TurnEngine
from localspec.turns.events import Delta, Emit
from localspec.turns.request import TurnRequest
from localspec.turns.result import TurnResult

# Keys a UI adds to messages for its own records (a cancelled or failed reply): never part of what a model sees.
LOCAL_KEYS = ("cancelled", "failed")


def model_messages(messages: Sequence[dict]) -> list[dict]:
    """The messages as a model gets them: without the keys only the app and the store read."""
    return [{k: v for k, v in m.items() if k not in LOCAL_KEYS} for m in messages]


class TurnProvider(Protocol):
    """Runs one assistant turn after a conversation."""

    kind: str  # "local" or the remote backend's kind ("openai")

    @property
    def n_ctx(self) -> int | None:
        """The context window, where known (the agent sizes tool results by it)."""

    def run(self, messages: Sequence[dict], request: TurnRequest, *, prompt_tools: Sequence[dict] = (),
            thinking: bool = True, cancel: threading.Event | None = None,
            emit: Emit | None = None) -> TurnResult: ...


class ChatTurns:
    """Turns on the local speculative engine. `prompt_tools` are the definitions the prompt shows (a turn may be
    allowed to call only some of them: request.tools)."""

    kind = "local"

    def __init__(self, engine, model=None, fmt=None):
        self.engine = engine
        self.model = model if model is not None else engine.target.model
        self.format = fmt if fmt is not None else tool_format(self.model)
        self.turns = TurnEngine(engine, self.model, self.format)

    @property
    def n_ctx(self) -> int:
        return self.engine.target.n_ctx

    def prompt(self, messages: Sequence[dict], prompt_tools: Sequence[dict] = (), thinking: bool = True) -> list[int]:
        template = self.model.chat_template
        tvars = think.template_vars(template, thinking)
        msgs = think.no_think(model_messages(messages), template, thinking)
        tools = list(prompt_tools) or None
        system = []
        for m in msgs:  # the leading system turns: with the tools, what every chat like this one starts with
            if m.get("role") != "system":
                break
            system.append(m)
        self.engine.keep_prefix(stable_prefix(self.model, system, tools, template_vars=tvars))
        return chat_prompt_tokens(self.model, msgs, tools=tools, template_vars=tvars)

    def run(self, messages: Sequence[dict], request: TurnRequest, *, prompt_tools: Sequence[dict] = (),
            thinking: bool = True, cancel: threading.Event | None = None, emit: Emit | None = None) -> TurnResult:
        t0 = time.perf_counter()
        first: list[float] = []

        def relay(ev) -> None:
            if not first and isinstance(ev, Delta):
                first.append(time.perf_counter() - t0)
            if emit is not None:
                emit(ev)

        prompt = self.prompt(messages, prompt_tools, thinking)
        result = self.turns.run(prompt, request, cancel=cancel, emit=relay)
        result.first_token_s = first[0] if first else None
        if result.phases:
            result.reused_prefix_tokens = result.phases[0][1].reused_prefix_tokens
        return result
