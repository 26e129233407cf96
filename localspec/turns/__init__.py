"""One assistant turn (reasoning, free text, tool calls under the schema), for every front end alike: the agent
loop adds tools around it, `serve` maps its events to OpenAI chunks, `localspec bench` measures it."""

from localspec.turns.calls import Bounds, new_call_id, parse_calls
from localspec.turns.engine import TurnEngine
from localspec.turns.events import CALL, JSON, REASONING, TEXT, Delta, PromptRead, ReasoningWritten, TurnEvent
from localspec.turns.request import TurnRequest
from localspec.turns.result import TurnResult
from localspec.turns.tool_choice import ToolChoice

__all__ = ["Bounds", "CALL", "Delta", "JSON", "PromptRead", "REASONING", "ReasoningWritten", "TEXT", "ToolChoice",
           "TurnEngine", "TurnEvent", "TurnRequest", "TurnResult", "new_call_id", "parse_calls"]
