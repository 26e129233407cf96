"""`localspec serve --backend openai`: the server's clients answered by an OpenAI-compatible server behind it.

Why: with backend.kind = "openai" in config.toml every front end generates on that server; `serve` too, so that a
client pointed at localspec (its port, its API key, its loopback guard, its /metrics) reaches the configured backend
instead of a local model. Requests are forwarded as they came (messages, tools, tool_choice, sampling, response
format, the thinking switch); answers come back through the same events as local generations (serve/generate.py),
with the statistics the backend reports (remote/turns.py). One request at a time, in the same fair queue.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from localspec.errors import LocalspecError
from localspec.remote.client import RemoteBackend, RemoteDone, RemoteReasoningDelta, RemoteTextDelta, RemoteToolCall
from localspec.remote.turns import remote_stats, wire_messages
from localspec.serve.api_errors import APIError, overloaded
from localspec.serve.generate import CallsEvent, DoneEvent, Emit, ErrorEvent, openai_call
from localspec.serve.metrics import Metrics
from localspec.serve.queue import Job, QueueFull, WorkQueue
from localspec.serve.responses import now
from localspec.serve.schemas import ChatRequest
from localspec.turns import REASONING, TEXT, Delta

log = logging.getLogger("localspec.serve")


@dataclass(frozen=True)
class _Format:
    name: str = "remote"  # what /v1/models says of the tool-call format: the backend's own business


class RemoteChatService:
    """The ChatService interface (plan, start, metrics, close) over a remote backend."""

    n_ctx = None

    def __init__(self, backend: RemoteBackend, *, model_id: str | None = None, max_waiting: int = 16):
        self.backend = backend
        self.model_id = model_id or backend.resolve_model()
        self.fmt = _Format()
        self.metrics = Metrics()
        self.queue = WorkQueue(max_waiting)
        self.created = now()

    def plan(self, req: ChatRequest) -> ChatRequest:
        return req  # the backend checks what it can serve; its 400s come back as ours

    def start(self, req: ChatRequest, emit: Emit, client: str = "", tenant: str = "") -> Job:
        def job_fn(job: Job) -> None:
            try:
                self._forward(req, job, emit)
            except APIError as exc:
                emit(ErrorEvent(exc))
            except LocalspecError as exc:  # the backend refused or went away: a gateway error, one line
                emit(ErrorEvent(APIError(502, str(exc), type="api_error")))
            except Exception as exc:
                log.exception("forwarding failed")
                emit(ErrorEvent(APIError(500, f"forwarding failed: {exc}", type="api_error")))

        try:
            return self.queue.submit(job_fn, client)
        except QueueFull as full:
            raise overloaded(full.retry_after) from None

    def _forward(self, req: ChatRequest, job: Job, emit: Emit) -> None:
        extra: dict = {}
        if req.tools:
            extra["parallel_tool_calls"] = req.parallel_tool_calls
        if not req.thinking:
            extra["chat_template_kwargs"] = {"enable_thinking": False}
        t0 = time.perf_counter()
        first = None
        pieces = 0
        calls: list[dict] = []
        done: RemoteDone | None = None
        for ev in self.backend.stream(wire_messages(req.messages), req.tools or None,
                                      req.tool_choice.openai() if req.tools else None, max_tokens=req.max_tokens,
                                      temperature=req.temperature, top_p=req.top_p, seed=req.seed,
                                      stop=list(req.stop) or None, response_format=req.response_format,
                                      cancel=job.cancel, extra=extra):
            if first is None and not isinstance(ev, RemoteDone):
                first = time.perf_counter() - t0
            if isinstance(ev, RemoteTextDelta):
                pieces += 1
                emit(Delta(ev.text, TEXT))
            elif isinstance(ev, RemoteReasoningDelta):
                emit(Delta(ev.text, REASONING))
            elif isinstance(ev, RemoteToolCall):
                calls.append(openai_call(ev.name, ev.arguments if ev.arguments is not None else {}))
            elif isinstance(ev, RemoteDone):
                done = ev
        if calls:
            emit(CallsEvent(calls))
        stats = remote_stats(done, pieces, time.perf_counter() - t0, first)
        finish = (done.finish_reason if done else None) or ("tool_calls" if calls else "stop")
        stats.finish_reason = finish
        self.metrics.observe(stats, finish)
        reasoning = (done.reasoning or None) if done else None
        emit(DoneEvent(finish, (done.content if done else "") or (None if calls else ""), calls, stats,
                       stats.prompt_tokens, stats.generated_tokens, reasoning=reasoning))

    def metrics_text(self) -> str:
        return self.metrics.render(self.queue.running, self.queue.waiting)

    def close(self) -> None:
        self.queue.close()
