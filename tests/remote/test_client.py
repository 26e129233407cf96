"""The remote (OpenAI-compatible) backend against `localspec serve` and against llama-cpp-python's own server."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from tests.serve_helpers import TOOLS, client, free_port

httpx = pytest.importorskip("httpx")

from localspec.cli import main  # noqa: E402
from localspec.remote import RemoteBackend, RemoteDone, RemoteError, RemoteTextDelta, RemoteToolCall  # noqa: E402
from localspec.remote.prom import parse_prometheus  # noqa: E402
from localspec.remote.reported_stats import from_llama_timings, from_prometheus, summary  # noqa: E402

HELLO = [{"role": "user", "content": "hello"}]


def _collect(events):
    events = list(events)
    assert isinstance(events[-1], RemoteDone) and sum(isinstance(e, RemoteDone) for e in events) == 1
    return events, events[-1]


def test_stream_from_localspec_serve_with_its_statistics(tiny_server):
    url, _ = tiny_server
    ref = client(url).chat.completions.create(model="tiny", messages=HELLO, max_tokens=10)
    backend = RemoteBackend(url + "/v1", api_key="unused")  # no model: the server's only model is used
    events, done = _collect(backend.stream(HELLO, max_tokens=10))
    assert backend.model == "tiny"
    assert "".join(e.text for e in events if isinstance(e, RemoteTextDelta)) == ref.choices[0].message.content
    assert done.content == ref.choices[0].message.content and done.finish_reason == "length"
    assert done.usage["completion_tokens"] == 10
    spec = ref.model_extra["localspec"]
    assert done.stats["source"] == "localspec"
    assert (done.stats["drafted"], done.stats["accepted"]) == (spec["drafted"], spec["accepted"])
    assert done.stats["drafters"]["model"]["drafted"] == spec["drafted"]


def test_tool_calls_come_back_as_events(tiny_server):
    url, _ = tiny_server
    events, done = _collect(RemoteBackend(url + "/v1", "tiny").stream(HELLO, tools=TOOLS, tool_choice="required",
                                                                       max_tokens=80))
    calls = [e for e in events if isinstance(e, RemoteToolCall)]
    assert len(calls) == 1 and done.tool_calls == calls and done.finish_reason == "tool_calls"
    call = calls[0]
    assert call.name in ("set_light", "pick_color") and call.error is None and isinstance(call.arguments, dict)
    assert json.loads(call.arguments_json) == call.arguments and call.id.startswith("call_")


def test_prometheus_difference_matches_the_response(tiny_server):
    """The vLLM path (spec_decode counters read before and after) on real counters: localspec serve exposes the
    same metric names under its own prefix."""
    url, _ = tiny_server
    before = parse_prometheus(httpx.get(url + "/metrics").text)
    r = client(url).chat.completions.create(model="tiny", messages=HELLO, max_tokens=12)
    after = parse_prometheus(httpx.get(url + "/metrics").text)
    got = from_prometheus(before, after)
    spec = r.model_extra["localspec"]
    assert got["source"].startswith("localspec /metrics")
    assert (got["drafted"], got["accepted"]) == (spec["drafted"], spec["accepted"])
    assert got["mean_accepted_length"] == round(1 + got["accepted"] / got["drafts"], 4)
    assert sum(got["accepted_per_position"]) == spec["accepted"]
    assert from_prometheus(before, before)["drafted"] == 0
    assert from_prometheus({}, {}) is None  # no spec_decode counters: no statistics


def _vllm_page(drafts, tokens, accepted, per_pos):
    lab = 'engine="0",model_name="llama-70b"'
    lines = ["# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.",
             "# TYPE vllm:spec_decode_num_drafts_total counter",
             f"vllm:spec_decode_num_drafts_total{{{lab}}} {drafts}.0",
             f"vllm:spec_decode_num_draft_tokens_total{{{lab}}} {tokens}.0",
             f"vllm:spec_decode_num_accepted_tokens_total{{{lab}}} {accepted}.0"]
    lines += [f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{lab},position="{i}"}} {v}.0'
              for i, v in enumerate(per_pos)]
    return "\n".join(lines) + "\n"


def test_vllm_metric_names_are_read():
    before = parse_prometheus(_vllm_page(30, 150, 110, [28, 25]))
    got = from_prometheus(before, parse_prometheus(_vllm_page(40, 200, 150, [38, 35])))
    assert got["source"].startswith("vllm /metrics")
    assert (got["drafts"], got["drafted"], got["accepted"]) == (10, 50, 40)
    assert got["acceptance_rate"] == 0.8 and got["mean_accepted_length"] == 5.0
    assert got["accepted_per_position"] == [10, 10]


def test_llama_server_timings_are_read():
    got = from_llama_timings({"predicted_n": 64, "predicted_per_second": 30.5, "draft_n": 40, "draft_n_accepted": 30})
    assert (got["source"], got["drafted"], got["accepted"], got["acceptance_rate"]) == ("llama-server", 40, 30, 0.75)
    assert got["mean_accepted_length"] is None  # llama-server does not report it: not estimated
    assert from_llama_timings({"predicted_n": 64}) is None  # no draft model: no speculative statistics


def test_run_command_with_openai_backend(tiny_server, capsys, home):
    url, _ = tiny_server
    assert main(["run", "hello", "--backend", "openai", "--base-url", url + "/v1", "--model", "tiny",
                 "--max-tokens", "6"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() and "accepted" in err and "[localspec]" in err
    assert main(["run", "hello", "--backend", "openai", "--base-url", url + "/v1", "--max-tokens", "6", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["stats"]["source"] == "localspec" and data["model"] == "tiny"
    assert data["usage"]["completion_tokens"] == 6


def test_remote_errors_are_one_line(tiny_server, capsys, home):
    url, _ = tiny_server
    # A request the server refuses (400, an OpenAI error body): the server's own message, its status, one line.
    # (Any model name is the loaded model, as in llama-server: a hard-coded "gpt-4o" is not an error.)
    with pytest.raises(RemoteError) as refused:
        list(RemoteBackend(url + "/v1", "gpt-4o").stream(HELLO, max_tokens=100_000))
    msg = str(refused.value)
    assert msg.startswith(url + "/v1/chat/completions: HTTP 400: This model's maximum context length is 512 tokens")
    assert "\n" not in msg and "Traceback" not in msg
    with pytest.raises(RemoteError, match=r"HTTP 400: tool_choice names 'nope', which is not in 'tools'$"):
        list(RemoteBackend(url + "/v1", "tiny").stream(HELLO, tools=TOOLS, max_tokens=2,
                                                        tool_choice={"type": "function", "function": {"name": "nope"}}))
    assert main(["run", "hi", "--backend", "openai", "--base-url", url + "/v1", "--max-tokens", "100000"]) == 1
    err = capsys.readouterr().err
    assert "HTTP 400: This model's maximum context length is 512 tokens" in err and len(err.strip().splitlines()) == 1
    with pytest.raises(RemoteError, match="cannot reach"):
        RemoteBackend(f"http://127.0.0.1:{free_port()}/v1", "x").complete(HELLO, max_tokens=2)
    assert main(["run", "hi", "--backend", "openai", "--base-url", url + "/v1", "--target", "x.gguf"]) == 1
    assert "local backend" in capsys.readouterr().err
    assert main(["run", "hi", "--backend", "openai"]) == 1
    assert "--base-url" in capsys.readouterr().err


# -- llama-cpp-python's OpenAI-compatible server: a peer implementation we did not write -------------------------
@pytest.fixture(scope="module")
def llama_cpp_server(smollm2, tmp_path_factory):
    for dep in ("fastapi", "pydantic_settings", "starlette_context", "sse_starlette", "uvicorn"):
        pytest.importorskip(dep, reason="llama_cpp.server needs llama-cpp-python[server]")
    port = free_port()
    log = tmp_path_factory.mktemp("llama_cpp_server") / "server.log"  # a file: llama.cpp logs would fill a pipe
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(smollm2), "--port", str(port),
                             "--n_ctx", "512", "--n_threads", "1", "--model_alias", "smollm2"],
                            stdout=subprocess.DEVNULL, stderr=open(log, "w"))
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                if httpx.get(url + "/models", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server did not start: {log.read_text()[-2000:]}")
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        proc.wait(20)


def test_against_llama_cpp_server_reports_no_statistics(llama_cpp_server, capsys, home):
    backend = RemoteBackend(llama_cpp_server)
    events, done = _collect(backend.stream(HELLO, max_tokens=6, temperature=0.0))
    assert backend.model == "smollm2"
    text = "".join(e.text for e in events if isinstance(e, RemoteTextDelta))
    assert text.strip() and done.content == text and done.finish_reason in ("length", "stop")
    assert done.stats is None  # it reports no speculative counters, and none are invented
    assert main(["run", "hello", "--backend", "openai", "--base-url", llama_cpp_server, "--max-tokens", "4"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() and "statistics unavailable" in err
    assert summary(None, "x") == "speculative statistics unavailable: x reports none"


@pytest.mark.parametrize("stats, words", [
    # localspec serve's field for a reply nothing was drafted for: its rate is 0.0, the summary says "–" as the
    # local one does (never "0%" of nothing)
    ({"source": "localspec", "drafted": 0, "accepted": 0, "acceptance_rate": 0.0, "mean_accepted_length": 1.0},
     "accepted 0/0 draft tokens (–), 1.00 tokens/pass [localspec]"),
    ({"source": "llama-server", "drafted": 0, "accepted": 0, "acceptance_rate": None, "mean_accepted_length": None},
     "accepted 0/0 draft tokens (–) [llama-server]"),
    ({"source": "localspec", "drafted": 8, "accepted": 6, "acceptance_rate": 0.75, "mean_accepted_length": 2.5,
      "tokens_per_second": 40.0}, "accepted 6/8 draft tokens (75%), 2.50 tokens/pass, 40.0 tok/s [localspec]"),
    ({"source": "vllm /metrics", "drafted": 8, "accepted": 6, "acceptance_rate": None, "mean_accepted_length": None},
     "accepted 6/8 draft tokens [vllm /metrics]"),
])
def test_summary_words_the_figures_as_the_local_one_does(stats, words):
    assert summary(stats) == words


def test_a_hostile_servers_tool_call_is_shown_escaped(capsys, home):
    """`run --backend openai` prints the tool calls a server sends back; their name and arguments are the server's
    text, so terminal escapes in them are shown, not run. The server here is a stand-in for a hostile one: it
    answers every completion with such a call."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    call = {"id": "c1", "type": "function", "function": {
        "name": "rm\x1b]0;pwned\x07", "arguments": json.dumps({"path": "\x1b[2J\x1b[31mred\u202e"})}}
    body = json.dumps({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": "", "tool_calls": [call]}}]}).encode()

    class Hostile(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):  # noqa: N802
            self.send_error(404)

        def log_message(self, *a):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/v1"
        assert main(["run", "hi", "--backend", "openai", "--base-url", url, "--model", "m", "--max-tokens", "5"]) == 0
    finally:
        server.shutdown()
    out = capsys.readouterr().out
    assert "[tool call] rm" in out and "pwned" in out and "red" in out
    assert not any(c in out for c in "\x1b\x07\u202e")


# -- issue 38.3: the API key goes only where it was configured to go ---------------------------------------------
class _Recorder:
    """A plain local HTTP server that records the Authorization header of every request; `redirect_to` makes it
    answer every request with a 302 to the same path under /moved there (the configured server gone rogue, or a
    proxy); a path under /moved is answered."""

    def __init__(self, redirect_to: str | None = None):
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        seen = self.seen = []
        self.redirect_to = redirect_to
        recorder = self
        completion = json.dumps({"choices": [{"index": 0, "finish_reason": "stop", "message": {
            "role": "assistant", "content": "hi"}}], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}).encode()

        class Handler(BaseHTTPRequestHandler):
            def _answer(self):
                seen.append((self.command, self.path, self.headers.get("Authorization")))
                if recorder.redirect_to is not None and not self.path.startswith("/moved"):
                    self.send_response(302)
                    self.send_header("Location", recorder.redirect_to + "/moved" + self.path)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if self.path.endswith("/models"):
                    body = json.dumps({"data": [{"id": "m"}]}).encode()
                elif self.path.endswith("/metrics"):
                    body = b"# nothing\n"
                else:
                    body = completion
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):  # noqa: N802
                self._answer()

            def do_POST(self):  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                self._answer()

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def rogue_redirect():
    """(the configured server, which redirects everything, and the other host it redirects to)."""
    other = _Recorder()
    home = _Recorder(redirect_to=other.url.replace("127.0.0.1", "localhost"))  # another host name: another origin
    yield home, other
    home.close()
    other.close()


def test_a_redirect_to_another_host_carries_no_key(rogue_redirect):
    home, other = rogue_redirect
    backend = RemoteBackend(home.url + "/v1", api_key="sk-secret-123")
    assert backend.models() == ["m"]  # /v1/models, followed
    backend.model = "m"
    backend.complete(HELLO, max_tokens=2)  # /metrics, then /v1/chat/completions
    paths = {p for _, p, _ in other.seen}
    assert {"/moved/v1/models", "/moved/metrics", "/moved/v1/chat/completions"} <= paths, other.seen
    assert all(auth == "Bearer sk-secret-123" for _, _, auth in home.seen)  # the configured server gets it
    assert [auth for _, _, auth in other.seen] == [None] * len(other.seen), other.seen


def test_serve_with_an_openai_backend_sends_no_key_on_a_redirect(rogue_redirect):
    """`serve --backend openai --backend-api-key KEY`: a client's request forwarded to a backend that redirects."""
    from localspec.serve.forward import RemoteChatService
    from localspec.serve.http_app import create_app
    from localspec.serve.server import start_in_thread

    home, other = rogue_redirect
    service = RemoteChatService(RemoteBackend(home.url + "/v1", "m", "sk-backend-456"))
    server = start_in_thread(create_app(service))
    try:
        httpx.post(server.url + "/v1/chat/completions", json={"model": "m", "messages": HELLO, "max_tokens": 2},
                   timeout=60)
    finally:
        server.stop()
        service.close()
    assert any(p == "/moved/v1/chat/completions" for _, p, _ in other.seen), other.seen
    assert all(auth is None for _, _, auth in other.seen), other.seen


def test_a_redirect_to_another_port_carries_no_key_and_one_on_the_same_server_keeps_it():
    target = _Recorder()
    hop = _Recorder(redirect_to=target.url)  # the same host, another port: another origin
    same = _Recorder()
    same.redirect_to = same.url  # a redirect within the configured server
    try:
        RemoteBackend(hop.url + "/v1", "m", "sk-1").complete(HELLO, max_tokens=2)
        assert target.seen and all(auth is None for _, _, auth in target.seen)
        RemoteBackend(same.url + "/v1", "m", "sk-2").complete(HELLO, max_tokens=2)
        assert any(p.startswith("/moved") for _, p, _ in same.seen)
        assert all(auth == "Bearer sk-2" for _, _, auth in same.seen), same.seen
    finally:
        for server in (hop, target, same):
            server.close()


@pytest.mark.parametrize("old,new,kept", [
    ("http://a:8000/v1/models", "http://a:8000/v2/models", True),
    ("https://a/v1", "https://A:443/x", True),
    ("http://a/v1", "https://a/v1", True),  # an upgrade to TLS on the same host
    ("https://a/v1", "http://a/v1", False),  # a downgrade would send the key in clear
    ("http://a/v1", "http://b/v1", False),
    ("http://a:8000/v1", "http://a:8001/v1", False),
    ("http://a/v1", "http://a.evil/v1", False),
    ("http://a/v1", "http://a:bad/v1", False),
])
def test_which_redirects_keep_the_key(old, new, kept):
    from localspec.remote.client import key_may_follow

    assert key_may_follow(old, new) is kept
