"""`localspec serve` through the official OpenAI client, on loopback, over real tiny GGUF models (llama.cpp)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from typing import Literal

import pytest

from tests.serve_helpers import API_KEY, TOOLS, client, free_port, running_server, wait_until_healthy

openai = pytest.importorskip("openai")
httpx = pytest.importorskip("httpx")
from pydantic import BaseModel  # noqa: E402

from localspec.prompting.formats.json_formats import HermesFormat  # noqa: E402
from localspec.prompting.prompt import chat_prompt_tokens  # noqa: E402
from localspec.remote.prom import parse_prometheus, total  # noqa: E402
from localspec.speculative.decoder import GenParams  # noqa: E402

HELLO = [{"role": "user", "content": "hello"}]


class Light(BaseModel):
    room: Literal["kitchen", "hall"]
    on: bool


def _metrics(url) -> dict:
    return parse_prometheus(httpx.get(url + "/metrics").text)


def test_models_list(tiny_server):
    url, _ = tiny_server
    assert [m.id for m in client(url).models.list()] == ["tiny"]


def test_completion_is_the_engines_greedy_output_with_stats(tiny_server):
    url, service = tiny_server
    r = client(url).chat.completions.create(model="tiny", messages=HELLO, max_tokens=12)
    choice = r.choices[0]
    assert choice.finish_reason == "length" and r.usage.completion_tokens == 12
    # The server's answer is exactly what the speculative engine generates greedily for the templated prompt.
    ref = service.engine.generate(chat_prompt_tokens(service.model, HELLO), GenParams(max_tokens=12))
    assert choice.message.content == ref.text
    spec = r.model_extra["localspec"]
    for key in ("drafted", "accepted", "acceptance_rate", "mean_accepted_length", "drafters"):
        assert key in spec
    assert spec["drafted"] > 0 and 0 <= spec["accepted"] <= spec["drafted"]
    assert spec["drafters"]["model"]["drafted"] == spec["drafted"]


def test_stream_matches_non_stream_and_last_chunk_has_stats(tiny_server):
    url, _ = tiny_server
    c = client(url)
    whole = c.chat.completions.create(model="tiny", messages=HELLO, max_tokens=10).choices[0].message.content
    chunks = list(c.chat.completions.create(model="tiny", messages=HELLO, max_tokens=10, stream=True,
                                            stream_options={"include_usage": True}))
    text = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
    assert text == whole
    assert [ch.choices[0].finish_reason for ch in chunks if ch.choices][-1] == "length"
    last = chunks[-1]
    assert last.usage.completion_tokens == 10
    assert last.model_extra["localspec"]["drafted"] > 0
    # Without include_usage, the finishing chunk itself carries the statistics.
    chunks = list(c.chat.completions.create(model="tiny", messages=HELLO, max_tokens=4, stream=True))
    assert chunks[-1].choices[0].finish_reason == "length" and "localspec" in chunks[-1].model_extra


def test_structured_parse_with_pydantic_model(tiny_server):
    url, _ = tiny_server
    c = client(url)
    r = c.chat.completions.parse(model="tiny", messages=HELLO, max_tokens=60, response_format=Light)
    assert isinstance(r.choices[0].message.parsed, Light)
    assert r.choices[0].finish_reason == "stop"
    r2 = c.beta.chat.completions.parse(model="tiny", messages=HELLO, max_tokens=60, response_format=Light)
    assert r2.choices[0].message.parsed == r.choices[0].message.parsed


def test_parse_with_pydantic_function_tool(tiny_server):
    url, _ = tiny_server
    r = client(url).chat.completions.parse(model="tiny", messages=HELLO, max_tokens=80, tool_choice="required",
                                           tools=[openai.pydantic_function_tool(Light, name="set_light")])
    (call,) = r.choices[0].message.tool_calls
    assert isinstance(call.function.parsed_arguments, Light)


def test_json_schema_stream_is_valid_json(tiny_server):
    url, _ = tiny_server
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}, "n": {"enum": [1, 2, 3]}},
              "required": ["ok", "n"]}
    chunks = list(client(url).chat.completions.create(
        model="tiny", messages=HELLO, max_tokens=60, stream=True,
        response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": schema, "strict": True}}))
    obj = json.loads("".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices))
    assert set(obj) == {"ok", "n"} and obj["n"] in (1, 2, 3)


def _check_call(call, names=("set_light", "pick_color")):
    assert call.type == "function" and call.id.startswith("call_") and call.function.name in names
    args = json.loads(call.function.arguments)
    if call.function.name == "set_light":
        assert args["room"] in ("kitchen", "hall") and isinstance(args["on"], bool)
    else:
        assert args["color"] in ("red", "green", "blue")


def test_tool_choice_required_and_named(tiny_server):
    url, _ = tiny_server
    c = client(url)
    r = c.chat.completions.create(model="tiny", messages=HELLO, tools=TOOLS, tool_choice="required", max_tokens=80)
    assert r.choices[0].finish_reason == "tool_calls" and len(r.choices[0].message.tool_calls) == 1
    _check_call(r.choices[0].message.tool_calls[0])
    named = {"type": "function", "function": {"name": "pick_color"}}
    r = c.chat.completions.create(model="tiny", messages=HELLO, tools=TOOLS, tool_choice=named, max_tokens=80)
    _check_call(r.choices[0].message.tool_calls[0], names=("pick_color",))
    # Streamed: the call arrives whole in one delta, then finish_reason tool_calls.
    chunks = list(c.chat.completions.create(model="tiny", messages=HELLO, tools=TOOLS, tool_choice=named,
                                            max_tokens=80, stream=True))
    calls = [tc for ch in chunks if ch.choices for tc in (ch.choices[0].delta.tool_calls or [])]
    assert len(calls) == 1 and calls[0].function.name == "pick_color"
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_tool_choice_auto_switches_to_constrained_call_at_the_trigger(tiny_pair_paths):
    """Auto mode generates freely and switches to the call grammar when the format's trigger appears. The tiny
    model knows no tool format, so the trigger is taken from its own greedy output: a custom format whose trigger
    is a word the model is known to write."""
    fmt = HermesFormat("probe")
    with running_server(*tiny_pair_paths, fmt=fmt, n_ctx=1024) as (url, _):
        c = client(url)
        free = c.chat.completions.create(model="tiny", messages=HELLO, tools=TOOLS, tool_choice="none",
                                         max_tokens=40).choices[0].message.content
        i = next(i for i in range(6, len(free) - 5) if free.find(free[i:i + 5]) == i and free[i:i + 5].strip() and
                 free[:i].strip())
        fmt.trigger = fmt.call_prefix = free[i:i + 5]
        fmt.triggers, fmt.call_suffix = (fmt.trigger,), ""
        r = c.chat.completions.create(model="tiny", messages=HELLO, tools=TOOLS, max_tokens=120)
        msg = r.choices[0].message
        assert r.choices[0].finish_reason == "tool_calls"
        assert msg.content == free[:i].strip()  # the text before the trigger, and not the trigger itself
        assert len(msg.tool_calls) == 1
        _check_call(msg.tool_calls[0])
        assert r.model_extra["localspec"]["generated_tokens"] > 0
        chunks = list(c.chat.completions.create(model="tiny", messages=HELLO, tools=TOOLS, max_tokens=120,
                                                stream=True))
        assert "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices) == free[:i]
        calls = [tc for ch in chunks if ch.choices for tc in (ch.choices[0].delta.tool_calls or [])]
        assert [tc.function.name for tc in calls] == [msg.tool_calls[0].function.name]


def test_tool_choice_auto_without_trigger_is_plain_text(tiny_server):
    url, _ = tiny_server
    r = client(url).chat.completions.create(model="tiny", messages=HELLO, tools=TOOLS, max_tokens=12)
    assert r.choices[0].finish_reason == "length" and not r.choices[0].message.tool_calls


# -- errors ------------------------------------------------------------------------------------------------------
def _error(resp, status, code=None, param=None):
    assert resp.status_code == status, resp.text
    err = resp.json()["error"]
    assert set(err) == {"message", "type", "param", "code"} and err["message"]
    if code:
        assert err["code"] == code
    if param:
        assert err["param"] == param
    return err


def test_malformed_json_is_400(tiny_server):
    url, _ = tiny_server
    r = httpx.post(url + "/v1/chat/completions", content=b'{"messages": [',
                   headers={"content-type": "application/json"})
    assert "JSON" in _error(r, 400)["message"]
    r = httpx.post(url + "/v1/chat/completions", json={"messages": "hi"})
    _error(r, 400, param="messages")
    r = httpx.post(url + "/v1/chat/completions", json={"messages": HELLO, "temperature": "hot"})
    _error(r, 400, param="temperature")


def test_any_model_name_means_the_loaded_model(tiny_server):
    """Clients hard-code model names: with one model loaded, any name is it (as llama-server does), and the
    response names the model that answered."""
    url, _ = tiny_server
    r = client(url).chat.completions.create(model="gpt-4o", messages=HELLO, max_tokens=4)
    assert r.model == "tiny" and r.choices[0].message.content
    chunks = list(client(url).chat.completions.create(model="gpt-4o", messages=HELLO, max_tokens=3, stream=True))
    assert {c.model for c in chunks} == {"tiny"}
    assert client(url).models.retrieve("gpt-4o").id == "tiny"
    _error(httpx.get(url + "/v1/nothing-here"), 404)


def test_context_overflow_is_400(tiny_server):
    url, _ = tiny_server
    c = client(url)
    with pytest.raises(openai.BadRequestError) as exc:
        c.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "word " * 600}], max_tokens=4)
    assert exc.value.code == "context_length_exceeded" and "512" in exc.value.message
    with pytest.raises(openai.BadRequestError) as exc:
        c.chat.completions.create(model="tiny", messages=HELLO, max_tokens=600)
    assert exc.value.code == "context_length_exceeded"


def test_invalid_schema_is_400(tiny_server):
    url, _ = tiny_server
    c = client(url)
    bad = {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "nonsense"}}}
    with pytest.raises(openai.BadRequestError) as exc:
        c.chat.completions.create(model="tiny", messages=HELLO, max_tokens=4, response_format=bad)
    assert exc.value.code == "invalid_schema" and "invalid schema" in exc.value.message
    bad_tool = [{"type": "function", "function": {"name": "f", "parameters": {"type": "bogus"}}}]
    with pytest.raises(openai.BadRequestError) as exc:
        c.chat.completions.create(model="tiny", messages=HELLO, max_tokens=4, tools=bad_tool, tool_choice="required")
    assert exc.value.code == "invalid_schema"
    with pytest.raises(openai.BadRequestError):
        c.chat.completions.create(model="tiny", messages=HELLO, max_tokens=4, tools=TOOLS,
                                  tool_choice={"type": "function", "function": {"name": "missing"}})


def test_api_key_required_when_set(tiny_pair_paths):
    with running_server(*tiny_pair_paths, api_key=API_KEY) as (url, _):
        with pytest.raises(openai.AuthenticationError):
            client(url, api_key="wrong").chat.completions.create(model="tiny", messages=HELLO, max_tokens=2)
        _error(httpx.get(url + "/v1/models"), 401, "invalid_api_key")
        r = client(url, api_key=API_KEY).chat.completions.create(model="tiny", messages=HELLO, max_tokens=2)
        assert r.usage.completion_tokens == 2
        assert httpx.get(url + "/metrics").status_code == 200  # scrapers need no key (counters only)


# -- queue, metrics, concurrency ----------------------------------------------------------------------------------
def test_metrics_counters_match_the_responses(tiny_server):
    url, _ = tiny_server
    before = _metrics(url)
    r = client(url).chat.completions.create(model="tiny", messages=HELLO, max_tokens=12)
    after = _metrics(url)
    spec = r.model_extra["localspec"]

    def delta(name, **labels):
        return total(after, "localspec:" + name, **labels) - (total(before, "localspec:" + name, **labels) or 0)

    assert delta("spec_decode_num_draft_tokens_total") == spec["drafted"]
    assert delta("spec_decode_num_accepted_tokens_total") == spec["accepted"]
    assert delta("generation_tokens_total") == 12
    assert delta("target_passes_total") == spec["target_passes"]
    assert delta("requests_total", status="200") == 1
    assert delta("spec_decode_num_accepted_tokens_per_pos_total") == spec["accepted"]
    assert 0 < delta("spec_decode_num_drafts_total") <= spec["target_passes"]
    text = httpx.get(url + "/metrics").text
    assert "# TYPE localspec:spec_decode_num_draft_tokens_total counter" in text
    assert "localspec:num_requests_waiting 0" in text


def test_full_queue_answers_503_with_retry_after(tiny_pair_paths):
    with running_server(*tiny_pair_paths, max_waiting=1) as (url, _):
        results = []

        def call():
            r = httpx.post(url + "/v1/chat/completions", timeout=120,
                           json={"model": "tiny", "messages": HELLO, "max_tokens": 400})
            results.append(r)

        threads = [threading.Thread(target=call) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        codes = sorted(r.status_code for r in results)
        assert set(codes) <= {200, 503} and 200 in codes and 503 in codes, codes
        busy = next(r for r in results if r.status_code == 503)
        assert int(busy.headers["retry-after"]) >= 1
        _error(busy, 503, "server_overloaded")
        assert total(_metrics(url), "localspec:requests_rejected_total") == codes.count(503)


def test_client_disconnect_cancels_generation(tiny_pair_paths):
    # A long window, so the generation cannot finish on its own before the disconnect is noticed.
    with running_server(*tiny_pair_paths, n_ctx=2048) as (url, service):
        _disconnect_and_check(url, service)


def _disconnect_and_check(url, service):
    before = _metrics(url)
    with httpx.stream("POST", url + "/v1/chat/completions", timeout=60,
                      json={"model": "tiny", "messages": HELLO, "max_tokens": 1900, "stream": True}) as r:
        lines = r.iter_lines()
        while not next(lines).startswith("data: {"):
            pass
    deadline = time.monotonic() + 30
    while service.queue.running and time.monotonic() < deadline:
        time.sleep(0.05)
    assert service.queue.running == 0
    after = _metrics(url)
    cancelled = total(after, "localspec:request_success_total", finished_reason="cancelled") or 0
    assert cancelled - (total(before, "localspec:request_success_total", finished_reason="cancelled") or 0) == 1
    # And the server goes on serving.
    assert client(url).chat.completions.create(model="tiny", messages=HELLO, max_tokens=3).usage.completion_tokens == 3


def test_load_8_clients_x_5_requests(tiny_server, capsys):
    url, _ = tiny_server
    ok, busy, failures, tokens = [], [], [], []
    lock = threading.Lock()

    def worker(k):
        c = client(url)
        for j in range(5):
            try:
                stream = j % 2 == 1
                if stream:
                    chunks = list(c.chat.completions.create(
                        model="tiny", messages=[{"role": "user", "content": f"client {k} request {j}"}],
                        max_tokens=8, stream=True, stream_options={"include_usage": True}))
                    n = chunks[-1].usage.completion_tokens
                else:
                    n = c.chat.completions.create(model="tiny", max_tokens=8,
                                                  messages=[{"role": "user", "content": f"client {k} request {j}"}]
                                                  ).usage.completion_tokens
                with lock:
                    ok.append(1)
                    tokens.append(n)
            except openai.APIStatusError as exc:
                with lock:
                    (busy if exc.status_code == 503 else failures).append(exc)
            except Exception as exc:  # anything else is a failure
                with lock:
                    failures.append(exc)

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    dt = time.perf_counter() - t0
    with capsys.disabled():
        print(f"\n[load] 8 clients x 5 requests: {len(ok)} ok, {len(busy)} x 503, {len(failures)} failed in {dt:.1f}s: "
              f"{len(ok) / dt:.1f} req/s, {sum(tokens) / dt:.1f} generated tok/s")
    assert not failures, failures[:3]
    assert len(ok) + len(busy) == 40 and len(ok) >= 1
    assert all(n == 8 for n in tokens)


# -- command line ------------------------------------------------------------------------------------------------
def test_serve_refuses_non_loopback_without_key(tiny_pair_paths, capsys):
    from localspec.cli import main

    assert main(["serve", "--host", "0.0.0.0", "--target", str(tiny_pair_paths[0])]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "--api-key" in err and len(err.splitlines()) == 1


@pytest.mark.slow  # the CLI in subprocesses
def test_serve_command_end_to_end(tiny_pair_paths, tmp_path):
    target, draft = tiny_pair_paths
    port = free_port()
    log = tmp_path / "serve.log"
    proc = subprocess.Popen([sys.executable, "-m", "localspec", "serve", "--target", str(target), "--draft",
                             str(draft), "--drafters", "model", "--port", str(port), "--ctx-size", "512",
                             "--threads", "1", "--model-name", "tiny-cli"], stdout=open(log, "w"), stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_healthy(url, proc, why=lambda: log.read_text()[-2000:])
        c = client(url)
        assert [m.id for m in c.models.list()] == ["tiny-cli"]
        r = c.chat.completions.create(model="tiny-cli", messages=HELLO, max_tokens=5)
        assert r.usage.completion_tokens == 5 and r.model_extra["localspec"]["drafted"] > 0
        assert "model 'tiny-cli'" in log.read_text()
    finally:
        proc.terminate()
        proc.wait(20)
