"""What one turn is asked to do: the same fields whether the agent, the server or the bench asks."""

from __future__ import annotations

from dataclasses import dataclass

from localspec.speculative import GenParams
from localspec.turns.calls import Bounds
from localspec.turns.tool_choice import ToolChoice

CALL_MAX_TOKENS = 1024  # most tokens in one call, unless the request says otherwise
MAX_CALLS = 8  # most calls in one turn: small models loop on calls


@dataclass(frozen=True)
class TurnRequest:
    """`params` governs the text phases (reasoning and answer share its max_tokens, its stop strings and sampling);
    calls take the same sampling. `tools` are the definitions a call may use: with none, the turn is plain text (a
    model that writes a call trigger anyway is answering in text).

    choice      what the turn may do about tools (turns/tool_choice.py); with "none", text up to a trigger is the
                answer and `wanted_call` says the model began a call
    parallel    after a call, a few free tokens let the model itself decide whether another follows (the probe);
                False: one call per turn
    total_tokens  most tokens the whole turn may write (OpenAI's max_tokens); None: each phase's own limit
    grammar     the whole output under this grammar (response_format): a JSON answer, or a call when tools are given
    bounds      limits for unbounded strings and arrays in calls (a suite's option; users' calls have none)
    """

    params: GenParams = GenParams()
    tools: tuple[dict, ...] = ()
    choice: ToolChoice = ToolChoice()
    parallel: bool = True
    max_calls: int = MAX_CALLS
    call_max_tokens: int = CALL_MAX_TOKENS
    total_tokens: int | None = None
    grammar: str | None = None
    bounds: Bounds = Bounds()
