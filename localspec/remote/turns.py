"""The remote backend as a turn provider (turns/conversation.py's TurnProvider): the agent loop, its tools, approvals and
MCP servers run here, the model's turns on an OpenAI-compatible server (vLLM, llama-server, another localspec).

A turn is one streamed chat completion: the conversation, the tools the prompt shows, the turn's tool choice (a
forced tool becomes OpenAI's named tool_choice), its sampling and token limit. What comes back is mapped onto the
local turn's result: text and reasoning as they stream, the calls at the end, and statistics from what the server
reports (remote/reported_stats.py: localspec serve's per-response figures, llama-server's timings, vLLM's counters), never
estimated here. A server that reports no speculative figures shows none ("–").
"""

from __future__ import annotations

import json
import threading
import time
from typing import Sequence

from localspec.remote.client import RemoteBackend, RemoteDone, RemoteReasoningDelta, RemoteTextDelta, RemoteToolCall
from localspec.speculative import Stats
from localspec.turns.conversation import model_messages
from localspec.turns.events import CALL, REASONING, TEXT, Delta, Emit
from localspec.turns.request import TurnRequest
from localspec.turns.result import TurnResult

# Message keys OpenAI's API defines; others (the app's own, a local model's reasoning) stay home: strict servers
# refuse unknown fields.
MESSAGE_KEYS = ("role", "content", "name", "tool_calls", "tool_call_id")


def wire_messages(messages: Sequence[dict]) -> list[dict]:
    return [{k: m[k] for k in MESSAGE_KEYS if k in m} for m in model_messages(messages)]


def tool_choice(request: TurnRequest, prompt_tools: Sequence[dict]):
    """OpenAI's tool_choice for a turn: "none", "auto", "required", or the named tool when the turn may call only
    one of the tools the prompt shows (the app's /tool NAME, run --tool-choice NAME)."""
    if request.choice == "none" or not request.tools:
        return "none"
    if request.choice == "required":
        names = [t["function"]["name"] for t in request.tools]
        if len(names) == 1 and len(prompt_tools) > 1:
            return {"type": "function", "function": {"name": names[0]}}
        return "required"
    return "auto"


def budget(request: TurnRequest) -> int:
    """One completion's token limit: a local turn gives its text and each call their own limits; a server gets one
    request for both, so a call may take as many tokens as a call may here."""
    if request.tools and request.choice != "none":
        return max(request.params.max_tokens, request.call_max_tokens)
    return request.params.max_tokens


def _int(value) -> int:
    return value if isinstance(value, int) and value >= 0 else 0


def remote_stats(done: RemoteDone | None, text_pieces: int, wall_s: float, first_s: float | None) -> Stats:
    """A turn's Stats from what the server said (usage, timings, speculative figures) and the times measured here."""
    usage = (done.usage if done else None) or {}
    timings = (done.timings if done else None) or {}
    spec = (done.stats if done else None) or {}
    generated = _int(usage.get("completion_tokens")) or _int(timings.get("predicted_n")) or text_pieces
    prompt = _int(usage.get("prompt_tokens")) or _int(timings.get("prompt_n")) + _int(timings.get("cache_n"))
    details = usage.get("prompt_tokens_details") or {}
    cached = _int(details.get("cached_tokens")) if isinstance(details, dict) else 0
    cached = cached or _int(timings.get("cache_n"))
    raw = spec.get("raw")
    raw = raw if isinstance(raw, dict) else {}
    # The server's own prefill time where it says (llama-server's prompt_ms, localspec's time_s): the rest of the
    # wall time is generation. Not the time to the first event: calls arrive whole at the end of a stream.
    prompt_ms = timings.get("prompt_ms")
    prefill_s = prompt_ms / 1000 if isinstance(prompt_ms, (int, float)) else \
        (raw.get("time_s") or {}).get("prefill", 0.0) if isinstance(raw.get("time_s"), dict) else 0.0
    st = Stats(generated_tokens=generated, prompt_tokens=prompt, prefill_tokens=max(prompt - cached, 0),
               reused_prefix_tokens=cached, wall_s=wall_s, prefill_s=min(float(prefill_s or 0.0), wall_s),
               first_token_s=first_s or 0.0)
    st.source = spec.get("source") or ("llama-server" if timings else "server")
    st.drafted, st.accepted = _int(spec.get("drafted")), _int(spec.get("accepted"))
    mal = spec.get("mean_accepted_length")
    if isinstance(mal, (int, float)) and mal >= 1 and generated:
        st.target_passes = round(generated / mal)
    if isinstance(raw.get("estimated_speedup"), (int, float)):
        st.remote_estimate = float(raw["estimated_speedup"])
    for name, figures in (spec.get("drafters") or {}).items():
        if isinstance(figures, dict):
            st.drafters[name].drafted = _int(figures.get("drafted"))
            st.drafters[name].accepted = _int(figures.get("accepted"))
    return st


def open_turns(config) -> "RemoteTurns":
    """The provider for a launch.remote.RemoteConfig (the server is asked nothing until the first turn)."""
    return RemoteTurns(RemoteBackend(config.base_url, config.model, config.api_key))


class RemoteTurns:
    """Turns generated by an OpenAI-compatible server."""

    kind = "openai"
    n_ctx = None  # the server's window is its own business; tool results are sized without it
    engine = model = format = None  # no local engine, model or call format

    def __init__(self, backend: RemoteBackend):
        self.backend = backend

    @property
    def label(self) -> str:
        """What a UI calls this backend: the model and where it runs."""
        host = self.backend.base_url.split("://", 1)[-1]
        return f"{self.backend.model or 'remote'} @ {host}"

    def run(self, messages: Sequence[dict], request: TurnRequest, *, prompt_tools: Sequence[dict] = (),
            thinking: bool = True, cancel: threading.Event | None = None, emit: Emit | None = None) -> TurnResult:
        emit = emit or (lambda ev: None)
        params = request.params
        sampling = params.sampling
        tools = [dict(t) for t in prompt_tools] or None
        extra: dict = {}
        if tools:
            extra["parallel_tool_calls"] = request.parallel
        if not thinking:  # vLLM, llama-server and localspec serve read the template's switch here
            extra["chat_template_kwargs"] = {"enable_thinking": False}
        out = TurnResult()
        t0 = time.perf_counter()
        first: float | None = None
        pieces = 0
        done: RemoteDone | None = None
        stream = self.backend.stream(
            wire_messages(messages), tools, tool_choice(request, prompt_tools) if tools else None,
            max_tokens=request.total_tokens or budget(request), temperature=sampling.temperature,
            top_p=sampling.top_p if sampling.temperature > 0 else None, seed=sampling.seed,
            stop=list(params.stop) or None, cancel=cancel, extra=extra)
        for ev in stream:
            if isinstance(ev, (RemoteTextDelta, RemoteReasoningDelta, RemoteToolCall)) and first is None:
                first = time.perf_counter() - t0
            if isinstance(ev, RemoteTextDelta):
                pieces += 1
                out.content += ev.text
                emit(Delta(ev.text, TEXT))
            elif isinstance(ev, RemoteReasoningDelta):
                out.reasoning += ev.text
                emit(Delta(ev.text, REASONING))
            elif isinstance(ev, RemoteToolCall):
                if ev.arguments is None:
                    why = f"the server's {ev.name} call has arguments that are not a JSON object; it was not run"
                    out.notices.append(why)
                    out.call_error = why
                    continue
                emit(Delta(json.dumps({"name": ev.name, "arguments": ev.arguments}, ensure_ascii=False), CALL))
                out.calls.append((ev.name, ev.arguments))
            elif isinstance(ev, RemoteDone):
                done = ev
        out.calls = out.calls[:request.max_calls]
        finish = done.finish_reason if done else None
        out.finish = "stop" if finish in (None, "tool_calls") else str(finish)
        if cancel is not None and cancel.is_set():
            out.finish = "cancelled"
        stats = remote_stats(done, pieces, time.perf_counter() - t0, first)
        stats.finish_reason = out.finish
        out.phases.append(("remote", stats))
        out.prompt_tokens = stats.prompt_tokens
        out.first_token_s = first
        out.reused_prefix_tokens = stats.reused_prefix_tokens
        return out
