"""An OpenAI-compatible server as the generation backend (stdlib HTTP: no client library needed).

    backend = RemoteBackend("http://gpu-box:8000/v1", "meta-llama/Llama-3.3-70B-Instruct")
    for ev in backend.stream(messages, tools=tools):
        ...  # RemoteTextDelta, then RemoteToolCall(s), then one RemoteDone(stats=dict | None)

The events are named for the remote server because they are its own vocabulary (an OpenAI stream: text, calls,
a finish), not the agent loop's events in localspec.agent.events.
"""

from __future__ import annotations

import http.client
import json
import threading
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Iterator
from urllib.parse import urlsplit

from localspec.errors import LocalspecError
from localspec.prompting.formats.base import coerce_arguments
from localspec.remote import reported_stats as rstats
from localspec.remote.prom import parse_prometheus
from localspec.remote.sse import sse_data


class RemoteError(LocalspecError):
    """The remote server is unreachable or refused the request (message includes its own error text)."""


@dataclass
class RemoteTextDelta:
    text: str


@dataclass
class RemoteReasoningDelta:
    text: str  # what a reasoning model thinks, as the server sends it (`reasoning_content`)


@dataclass
class RemoteToolCall:
    id: str
    name: str
    arguments: dict | None  # None when the server sent arguments that are not a JSON object (see error)
    arguments_json: str
    error: str | None = None


@dataclass
class RemoteDone:
    finish_reason: str | None
    content: str
    tool_calls: list[RemoteToolCall] = field(default_factory=list)
    usage: dict | None = None
    stats: dict | None = None  # see localspec.remote.reported_stats; None: the server reported no speculative statistics
    timings: dict | None = None  # llama-server's per-response timings (prompt_n, cache_n, predicted_ms, ...)
    reasoning: str = ""


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port or _DEFAULT_PORTS.get(scheme)
    except ValueError:  # a port that is not a number: no origin we would send the key to
        port = None
    return scheme, (parts.hostname or "").lower(), port


def key_may_follow(old_url: str, new_url: str) -> bool:
    """Whether the API key may go with a redirect from `old_url` to `new_url`: only to the same origin (scheme,
    host and port), or from http to https on the same host. Why: urllib's own redirect handler copies every
    header, so a 302 from the configured server to another host sent it `Authorization: Bearer ...`, and a redirect
    from https to http would send the key in clear."""
    old, new = _origin(old_url), _origin(new_url)
    if old == new:
        return True
    return old[0] == "http" and new[0] == "https" and old[1] == new[1] and old[2] == 80 and new[2] == 443


class _KeyStaysHome(urllib.request.HTTPRedirectHandler):
    """Follows redirects as urllib does, without the Authorization header where key_may_follow says no."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and not key_may_follow(req.full_url, new.full_url):
            for name in [k for k in new.headers if k.lower() == "authorization"]:
                del new.headers[name]
            new.unredirected_hdrs.pop("Authorization", None)
        return new


_OPENER = urllib.request.build_opener(_KeyStaysHome())


class RemoteBackend:
    def __init__(self, base_url: str, model: str | None = None, api_key: str | None = None, *,
                 timeout: float = 600.0):
        if not base_url.startswith(("http://", "https://")):
            raise RemoteError(f"--base-url must start with http:// or https://, got {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key
        self.timeout = timeout
        root = self.base_url[:-3] if self.base_url.endswith("/v1") else self.base_url
        self.metrics_url = root + "/metrics"
        self._prom: bool | None = None  # does /metrics carry spec_decode counters? (None: not checked yet)
        self._per_response = False  # the server puts statistics in each response: no need to read /metrics

    # -- HTTP ------------------------------------------------------------------------------------------------
    def _headers(self) -> dict:
        h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if self.api_key:
            h["Authorization"] = f"Bearer {self.api_key}"
        return h

    def _open(self, path_or_url: str, body: dict | None = None, timeout: float | None = None):
        url = path_or_url if path_or_url.startswith("http") else self.base_url + path_or_url
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url, data=data, headers=self._headers(), method="POST" if data else "GET")
        try:
            return _OPENER.open(req, timeout=timeout or self.timeout)
        except urllib.error.HTTPError as exc:
            raise RemoteError(f"{url}: HTTP {exc.code}: {_error_text(exc)}{self._v1_hint(exc.code)}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise RemoteError(f"cannot reach {url}: {reason}") from None

    def _v1_hint(self, status: int) -> str:
        """A 404 from a base URL without /v1 is most often just that: OpenAI-compatible servers (vLLM, llama-server,
        localspec serve) answer under /v1."""
        if status != 404 or "/v1" in urllib.parse.urlsplit(self.base_url).path:
            return ""
        return f" (OpenAI-compatible servers answer under /v1: try the base URL {self.base_url}/v1)"

    def models(self) -> list[str]:
        with self._open("/models", timeout=30) as resp:
            return [m["id"] for m in json.load(resp).get("data", [])]

    def resolve_model(self) -> str:
        """The configured model, or the server's only/first model when none was given."""
        if not self.model:
            ids = self.models()
            if not ids:
                raise RemoteError(f"{self.base_url} lists no models: pass --model")
            self.model = ids[0]
        return self.model

    def _scrape(self) -> dict | None:
        if self._per_response or self._prom is False:
            return None
        try:
            with self._open(self.metrics_url, timeout=10) as resp:
                samples = parse_prometheus(resp.read().decode("utf-8", "replace"))
        except RemoteError:
            self._prom = False
            return None
        self._prom = rstats.prom_prefix(samples) is not None
        return samples if self._prom else None

    # -- generation ------------------------------------------------------------------------------------------
    def stream(self, messages: list[dict], tools: list[dict] | None = None, tool_choice=None, *,
               max_tokens: int | None = None, temperature: float | None = None, top_p: float | None = None,
               seed: int | None = None, stop: list[str] | None = None, response_format: dict | None = None,
               cancel: threading.Event | None = None, extra: dict | None = None,
               ) -> Iterator[RemoteTextDelta | RemoteReasoningDelta | RemoteToolCall | RemoteDone]:
        """`extra`: more request fields (parallel_tool_calls, chat_template_kwargs, ...)."""
        body = {"model": self.resolve_model(), "messages": messages, "stream": True,
                "stream_options": {"include_usage": True}, **(extra or {})}
        for key, value in (("tools", tools), ("tool_choice", tool_choice), ("max_tokens", max_tokens),
                           ("temperature", temperature), ("top_p", top_p), ("seed", seed), ("stop", stop or None),
                           ("response_format", response_format)):
            if value is not None:
                body[key] = value
        before = self._scrape()
        content: list[str] = []
        reasoning: list[str] = []
        calls: dict[int, dict] = {}
        state: dict = {}
        with self._open("/chat/completions", body) as resp:
            try:
                yield from self._read(resp, content, reasoning, calls, cancel, state)
            except (OSError, http.client.HTTPException) as exc:  # the connection broke mid-answer
                raise RemoteError(f"{self.base_url}: the answer was cut off: {exc}") from None
            except ValueError as exc:  # not JSON where a chunk should be
                raise RemoteError(f"{self.base_url}: an answer that is not OpenAI's format: {exc}") from None
        finish, usage, field_stats, timings = (state.get(k) for k in ("finish", "usage", "stats", "timings"))
        events = [_call_event(c) for _, c in sorted(calls.items())]
        yield from events
        yield RemoteDone(finish, "".join(content), events, usage, self._stats(field_stats, timings, before),
                         timings if isinstance(timings, dict) else None, "".join(reasoning))

    def _read(self, resp, content: list[str], reasoning: list[str], calls: dict, cancel, state: dict):
        """The response's chunks as events; what ends up in RemoteDone goes into `state` as it comes."""
        payloads: Iterator[Any]
        if "text/event-stream" in resp.headers.get("Content-Type", ""):
            payloads = (json.loads(d) for d in sse_data(resp) if d.strip() != "[DONE]")
        else:  # a server that ignores "stream": one whole completion
            payloads = iter([_as_chunk(json.load(resp))])
        for obj in payloads:
            if cancel is not None and cancel.is_set():
                state["finish"] = "cancelled"
                return
            if not isinstance(obj, dict):
                continue
            if "error" in obj:
                raise RemoteError(f"{self.base_url}: {_message(obj['error'])}")
            for key, name in (("localspec", "stats"), ("timings", "timings"), ("usage", "usage")):
                if obj.get(key):
                    state[name] = obj[key]
            for choice in obj.get("choices") or []:
                delta = choice.get("delta") or {}
                if isinstance(delta.get("reasoning_content"), str) and delta["reasoning_content"]:
                    reasoning.append(delta["reasoning_content"])
                    yield RemoteReasoningDelta(delta["reasoning_content"])
                if delta.get("content"):
                    content.append(delta["content"])
                    yield RemoteTextDelta(delta["content"])
                for tc in delta.get("tool_calls") or []:
                    _merge_call(calls, tc)
                state["finish"] = choice.get("finish_reason") or state.get("finish")

    def complete(self, messages: list[dict], **kw) -> RemoteDone:
        """The whole answer at once (still streamed underneath)."""
        done = None
        for ev in self.stream(messages, **kw):
            done = ev if isinstance(ev, RemoteDone) else done
        assert done is not None  # stream() ends with a RemoteDone or raises
        return done

    def _stats(self, field_stats, timings, before) -> dict | None:
        if isinstance(field_stats, dict):
            self._per_response = True
            return rstats.from_localspec(field_stats)
        found = rstats.from_llama_timings(timings) if timings else None
        if found is not None:
            self._per_response = True
            return found
        if before is not None:
            after = self._scrape()
            if after is not None:
                return rstats.from_prometheus(before, after)
        return None


def _merge_call(calls: dict[int, dict], tc: dict) -> None:
    """Streamed tool calls arrive in pieces: the first with id and name, then argument fragments."""
    slot = calls.setdefault(tc.get("index", len(calls)), {"id": "", "name": "", "arguments": ""})
    slot["id"] = tc.get("id") or slot["id"]
    fn = tc.get("function") or {}
    slot["name"] += fn.get("name") or ""
    args = fn.get("arguments")
    slot["arguments"] += args if isinstance(args, str) else (json.dumps(args) if args is not None else "")


def _call_event(c: dict) -> RemoteToolCall:
    args, err = coerce_arguments(c["arguments"])
    return RemoteToolCall(c["id"], c["name"], args, c["arguments"], err)


def _as_chunk(completion: dict) -> dict:
    """A non-streamed completion rewritten as one chunk (message -> delta)."""
    out = dict(completion)
    out["choices"] = [{**ch, "delta": ch.get("message") or {}} for ch in completion.get("choices") or []]
    for ch in out["choices"]:
        for i, tc in enumerate(ch["delta"].get("tool_calls") or []):
            tc.setdefault("index", i)
    return out


def _message(err) -> str:
    if isinstance(err, dict):
        return str(err.get("message") or err)
    return str(err)


def _error_text(exc: urllib.error.HTTPError) -> str:
    try:
        body = exc.read().decode("utf-8", "replace")
        data = json.loads(body)
        if isinstance(data, dict) and "error" in data:
            return _message(data["error"])
        if isinstance(data, dict) and "detail" in data:  # FastAPI-style servers
            return str(data["detail"])
        return body[:300]
    except Exception:
        return exc.reason if isinstance(exc.reason, str) else "error"
