"""The HTTP layer (Starlette + server-sent events): routes, API key, OpenAI error bodies, stream framing.

Generation runs in the service's worker thread; its events cross into the event loop through an asyncio queue.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import time
from typing import Sequence

from localspec.serve.api_errors import APIError, internal, unauthorized
from localspec.serve.body import parse_json, read_body
from localspec.serve.generate import CallsEvent, DoneEvent, ErrorEvent
from localspec.serve.guard import LoopbackOnly
from localspec.serve.plan import Plan
from localspec.serve.responses import chunk, completion, model_card, new_id, now, spec_stats, stream_calls_delta, usage
from localspec.serve.schemas import parse_chat_request
from localspec.serve.service import ChatService
from localspec.turns import REASONING, Delta

log = logging.getLogger("localspec.serve")  # one line per request for the debug log (debug_log.py)
RELAY_S = 0.02  # a stream's events wake the event loop at most this often (see _relay)


def create_app(service: ChatService, api_key: str | Sequence[str] | None = None):
    """`api_key`: the key, or keys (each its own tenant: serve/tenants.py), every API request needs; None: none."""
    from sse_starlette.sse import EventSourceResponse
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.requests import Request
    from starlette.responses import JSONResponse, PlainTextResponse
    from starlette.routing import Route

    keys = [api_key] if isinstance(api_key, str) else list(api_key or ())

    def check_key(request: Request) -> str:
        return tenant_of(keys, request.headers.get("authorization", ""))

    async def models(request: Request):
        check_key(request)
        card = model_card(service.model_id, service.created, meta={"n_ctx": service.n_ctx,
                                                                   "tool_format": service.fmt.name})
        return JSONResponse({"object": "list", "data": [card]})

    async def model(request: Request):
        check_key(request)
        # Any name is the one loaded model (as for chat completions); the card says its real id.
        return JSONResponse(model_card(service.model_id, service.created))

    async def chat(request: Request):
        try:
            return await _chat(request)
        except APIError as exc:
            service.metrics.request(exc.status)
            log.info("chat request answered %d: %s", exc.status, exc)
            raise

    async def _chat(request: Request):
        tenant = check_key(request)
        body = await asyncio.to_thread(parse_json, await read_body(request))  # a big body takes a second
        req = parse_chat_request(body)
        plan = await asyncio.to_thread(service.plan, req)  # tokenizing and schema checks: off the event loop
        loop = asyncio.get_running_loop()
        events: asyncio.Queue = asyncio.Queue()
        emit = _relay(loop, events, stream=req.stream)

        client = request.client.host if request.client else ""
        if isinstance(plan, Plan):  # a remote backend's service passes the request on as it came (serve/forward.py)
            log.info("chat request from %s: %d messages, %d tools, tool_choice=%s, stream=%s, mode=%s, "
                     "max_tokens=%d, prompt=%d tokens, queue: %d waiting", client or "?", len(req.messages),
                     len(req.tools), req.tool_choice, req.stream, plan.mode,
                     plan.params.max_tokens, len(plan.prompt), service.queue.waiting)
        else:
            log.info("chat request from %s: %d messages, %d tools, stream=%s: to the backend", client or "?",
                     len(req.messages), len(req.tools), req.stream)
        job = service.start(plan, emit, client=client, tenant=tenant)
        rid, created, mid = new_id(), now(), service.model_id
        if req.stream:
            service.metrics.request(200)
            return EventSourceResponse(_stream(events, job, rid, created, mid, req.include_usage), sep="\n",
                                       ping=15)
        # The body is read: the next ASGI message is the client going away. Watch for it the whole time, also
        # while events keep coming (a free-text answer emits one per token).
        gone = asyncio.ensure_future(_disconnected(request))
        try:
            while True:
                nxt = asyncio.ensure_future(events.get())
                await asyncio.wait({nxt, gone}, return_when=asyncio.FIRST_COMPLETED)
                if not nxt.done():
                    nxt.cancel()
                    job.cancel.set()
                    return JSONResponse({}, status_code=499)
                ev = nxt.result()
                if isinstance(ev, DoneEvent):
                    service.metrics.request(200)
                    return JSONResponse(completion(rid, created, mid, ev))
                if isinstance(ev, ErrorEvent):
                    raise ev.error
        finally:
            gone.cancel()
            job.cancel.set()  # finished, failed or abandoned: the engine must not keep generating for nobody

    async def metrics(request: Request):
        return PlainTextResponse(service.metrics_text(), media_type="text/plain; version=0.0.4; charset=utf-8")

    async def health(request: Request):
        return JSONResponse({"status": "ok", "waiting": service.queue.waiting, "running": service.queue.running})

    async def api_error(request: Request, exc: APIError):
        return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers)

    async def http_error(request: Request, exc: HTTPException):
        kind = "not_found_error" if exc.status_code == 404 else "invalid_request_error"
        err = APIError(exc.status_code, f"{request.method} {request.url.path}: {exc.detail}", type=kind)
        return JSONResponse(err.body(), status_code=exc.status_code, headers=getattr(exc, "headers", None))

    async def crash(request: Request, exc: Exception):
        err = internal(f"internal server error: {type(exc).__name__}: {exc}")
        return JSONResponse(err.body(), status_code=500)

    routes = [
        Route("/v1/models", models, methods=["GET"]),
        Route("/v1/models/{name:path}", model, methods=["GET"]),
        Route("/v1/chat/completions", chat, methods=["POST"]),
        Route("/metrics", metrics, methods=["GET"]),
        Route("/health", health, methods=["GET"]),
    ]
    # Starlette types each handler as taking any Exception; one registered for a subclass gets only that subclass.
    app = Starlette(routes=routes, exception_handlers={APIError: api_error, HTTPException: http_error,  # type: ignore[dict-item]
                                                       Exception: crash})
    return app if keys else LoopbackOnly(app)  # no key: no web pages, no rebound DNS names


def tenant_of(keys: Sequence[str], authorization: str) -> str:
    """A request's tenant: the name of the key its Authorization header carries ('' without keys); 401 without a
    valid one."""
    if not keys:
        return ""
    got = authorization
    scheme, _, token = got.partition(" ")
    given = token.strip().encode()
    found = ""
    for i, key in enumerate(keys):  # every key compared, in constant time: which one matched is not timed
        if hmac.compare_digest(given, key.encode()):
            found = f"key{i + 1}"
    if scheme.lower() != "bearer" or not found:
        raise unauthorized()
    return found


def _relay(loop, events: asyncio.Queue, *, stream: bool):
    """The worker thread's events into the event loop's queue, waking the loop as seldom as serves the client.
    Why: every wake-up runs Python on a core that llama.cpp's threads are using. On 2 cores (SmolLM2-135M F16,
    256 tokens, after the compute thread fixed the larger loss, runtime/compute_thread.py) a non-streamed
    request with default drafting ran at 99 / 380 / 399 tok/s (first, repeats) with this relay against 94 /
    360 / 376 waking the loop for every event; target-only was the same either way. A whole response is built from the Done
    event alone, so its text events are not sent; a stream gets them in batches, at most one wake-up per
    RELAY_S: an event within RELAY_S of the last wake-up goes with the next one (the next token's, a step
    later) or with the end."""
    pending: list = []
    state = {"queued": False, "last": 0.0}

    def flush() -> None:  # in the event loop
        state["queued"] = False
        while pending:
            events.put_nowait(pending.pop(0))

    def emit(ev) -> None:  # called from the worker thread
        final = isinstance(ev, (DoneEvent, ErrorEvent))
        if not stream and not final:
            return
        pending.append(ev)
        now = time.monotonic()
        if state["queued"] or (not final and now - state["last"] < RELAY_S):
            return
        state["queued"], state["last"] = True, now
        try:
            loop.call_soon_threadsafe(flush)
        except RuntimeError:  # the event loop is gone (shutdown)
            pass
    return emit


async def _disconnected(request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def _stream(events, job, rid, created, mid, include_usage):
    try:
        yield json.dumps(chunk(rid, created, mid, {"role": "assistant", "content": ""}))
        while True:
            ev = await events.get()
            if isinstance(ev, Delta):
                key = "reasoning_content" if ev.kind == REASONING else "content"
                yield json.dumps(chunk(rid, created, mid, {key: ev.text}))
            elif isinstance(ev, CallsEvent):
                yield json.dumps(chunk(rid, created, mid, stream_calls_delta(ev.calls)))
            elif isinstance(ev, ErrorEvent):
                err = ev.error if isinstance(ev.error, APIError) else internal(str(ev.error))
                yield json.dumps(err.body())
                break
            elif isinstance(ev, DoneEvent):
                stats = spec_stats(ev)
                if include_usage:  # OpenAI sends usage in an extra last chunk with no choices
                    yield json.dumps(chunk(rid, created, mid, {}, ev.finish_reason))
                    yield json.dumps(chunk(rid, created, mid, None, usage=usage(ev), localspec=stats))
                else:
                    yield json.dumps(chunk(rid, created, mid, {}, ev.finish_reason, localspec=stats))
                break
        yield "[DONE]"
    finally:
        job.cancel.set()  # also when the client disconnected mid-stream
