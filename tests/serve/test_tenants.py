"""Issue 38.1: what `serve` drafts from, and what its responses say, stays each API key's own.

A hostile client learns a secret through the per-drafter statistics (a tool whose argument is an `enum` of guesses:
the history drafter drafts the stored continuation or nothing) and another client's prompt through the cache
figures (`cached_tokens`: how much of its prompt the previous request left in the cache). These tests are that
client: they try, and learn nothing, on real servers over the tiny GGUF."""

from __future__ import annotations

import json
from contextlib import contextmanager

import pytest

from tests.serve_helpers import serve_process

httpx = pytest.importorskip("httpx")

SECRET, WRONG = "DB_PASSWORD=hunter2", "DB_PASSWORD=letmein"
WRITE = {"type": "function", "function": {"name": "write_file", "parameters": {
    "type": "object", "properties": {"path": {"enum": ["config.env"]}, "content": {"enum": [SECRET, WRONG]}},
    "required": ["path", "content"]}}}
PROBE = {"model": "m", "max_tokens": 40, "tool_choice": "required", "tools": [WRITE],
         "messages": [{"role": "user", "content": "write the config"}]}
DRAFTERS = "schema,history,ngram"


def _post(url: str, body: dict, key: str | None = None) -> dict:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    r = httpx.post(url + "/v1/chat/completions", json=body, headers=headers, timeout=120)
    assert r.status_code == 200, r.text[:300]
    return r.json()


def _learned(response: dict) -> dict:
    """Everything a response says that drafting memory or the cache could shape (timings aside)."""
    spec = response["localspec"]
    return {"drafters": spec["drafters"], "cached": response["usage"]["prompt_tokens_details"]["cached_tokens"],
            **{k: spec[k] for k in ("reused_prefix_tokens", "restored_prefix_tokens", "prefill_tokens", "drafted",
                                    "accepted", "draft_model_shapes")}}


@pytest.mark.slow  # two servers of SmolLM2 (where drafting pays, so the policy drafts) in processes of their own
def test_the_owners_stored_secret_is_drafted_from_only_when_the_owner_says_so(smollm2_f16, tmp_path, monkeypatch):
    """A `write_file` call holding DB_PASSWORD=... in the owner's conversation store: a client's probe draws
    nothing from it, unless the server was started with --draft-from-history (then it does: the channel is real)."""
    from localspec.conversations import open_store

    monkeypatch.setenv("LOCALSPEC_HOME", str(tmp_path))
    with open_store() as store:
        cid = store.create()
        store.add_message(cid, {"role": "user", "content": "keep the password"})
        store.add_call(cid, json.dumps({"name": "write_file", "arguments": {"path": "config.env",
                                                                              "content": SECRET}}), "write_file")
    seen = {}
    for flag in ((), ("--draft-from-history",)):
        with serve_process(smollm2_f16, tmp_path, "--drafters", DRAFTERS, *flag) as (url, _):
            seen[flag] = _learned(_post(url, PROBE))["drafters"]
    assert seen[()].get("history", {}).get("drafted", 0) == 0, seen
    assert seen[("--draft-from-history",)]["history"]["drafted"] > 0, seen


@pytest.mark.slow  # servers of SmolLM2 in processes of their own, with two keys
def test_another_keys_request_teaches_a_client_nothing(smollm2_f16, tmp_path):
    """Key B sends its secret; key A probes for it with the right guess. What A's response says (per-drafter
    counts, cached and reused prompt tokens, prefill) is the same whether B's secret was that guess or another:
    B's request is in neither A's drafting memory nor A's cache figures."""
    learned = []
    for b_secret in (SECRET, "DB_PASSWORD=qwerty9"):
        home = tmp_path / b_secret[-6:]
        home.mkdir()
        with serve_process(smollm2_f16, home, "--drafters", DRAFTERS, "--api-key", "key-a", "--api-key",
                           "key-b") as (url, _):
            b_says = {**PROBE, "messages": [{"role": "user", "content": "write the config"},
                                             {"role": "assistant", "content": None, "tool_calls": [{
                                                 "id": "c1", "type": "function", "function": {
                                                     "name": "write_file", "arguments": json.dumps(
                                                         {"path": "config.env", "content": b_secret})}}]},
                                             {"role": "tool", "tool_call_id": "c1", "content": "written"},
                                             {"role": "user", "content": "again"}]}
            _post(url, b_says, "key-b")
            _post(url, b_says, "key-b")
            a_probe = {**b_says, "messages": b_says["messages"][:1] + [
                {**b_says["messages"][1], "tool_calls": [{**b_says["messages"][1]["tool_calls"][0], "function": {
                    "name": "write_file", "arguments": json.dumps({"path": "config.env", "content": SECRET})}}]},
                *b_says["messages"][2:]]}
            learned.append(_learned(_post(url, a_probe, "key-a")))
    # The schema and n-gram drafters draft from A's own request; whether the policy asks them at a step depends on
    # what their lookups cost on this machine (timing), so their counts are left out: memory and cache are what
    # B's request could have changed.
    for seen in learned:
        seen["drafters"] = seen["drafters"].get("history")
        del seen["drafted"], seen["accepted"]
    assert learned[0] == learned[1], learned
    assert learned[0]["drafters"] is None  # nothing drafted from memory: A's holds nothing of B's
    assert learned[0]["cached"] == 0 and learned[0]["reused_prefix_tokens"] == 0  # A's first request: nothing of A's


# -- the same, in this process (fast): each key its own memory, and its own cache figures -------------------------
@contextmanager
def _keyed_server(tiny_target, keys=("key-a", "key-b")):
    """A server wired as `localspec serve --api-key ...` wires it (commands/serve.py): one engine per key, the
    pass prices shared, nothing from the owner's store."""
    from localspec.runtime.context import ContextSettings
    from localspec.runtime.pair import load_pair
    from localspec.serve.http_app import create_app
    from localspec.serve.server import start_in_thread
    from localspec.serve.service import ChatService
    from localspec.speculative import CallHistory, DraftingConfig, GenParams, build_engine

    drafting = DraftingConfig(drafters=tuple(DRAFTERS.split(",")))
    pair = load_pair(str(tiny_target), ctx=ContextSettings(n_ctx=1024, n_threads=1))
    engine = build_engine(pair, drafting, history=CallHistory())
    service = ChatService(pair, engine, model_id="m", defaults=GenParams(max_tokens=16), isolated=len(keys) > 1,
                          more_engines=lambda: build_engine(pair, drafting, history=CallHistory(), costs=engine.costs))
    server = start_in_thread(create_app(service, list(keys)))
    try:
        yield server.url, service
    finally:
        server.stop()
        service.close()


REPEATS = 3  # repeats of a request within which recall drafts from the memory of it (the policy may wait a turn)


def _history(response: dict) -> int:
    return response["localspec"]["drafters"].get("history", {}).get("drafted", 0)


def _recalled(url: str, key: str) -> int:
    """Tokens drafted from memory over REPEATS more sendings of ASK by `key` (it sent ASK before)."""
    return sum(_history(_post(url, ASK, key)) for _ in range(REPEATS))
ASK = {"model": "m", "max_tokens": 64, "temperature": 0,
       "messages": [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "count to ten"}]}


def test_each_key_drafts_from_a_memory_of_its_own(tiny_target):
    """Key A's request is remembered in A's engine (recall's memory of its generation, the copy memory of its text);
    key B's engine, on the same pair and pass prices, holds none of it, and answers the same request alike."""
    with _keyed_server(tiny_target) as (url, service):
        first = _post(url, ASK, "key-a")
        a, b = service.tenants.get("key1"), service.tenants.get("key2")
        assert _remembered(a.engine) > 0 and _remembered(b.engine) == 0
        other = _post(url, ASK, "key-b")
        assert a.engine is not b.engine and a.engine.costs is b.engine.costs
    assert _history(other) == _history(first) == 0  # B starts as A started: nothing of A's to draft from
    assert other["choices"][0]["message"]["content"] == first["choices"][0]["message"]["content"]


def _remembered(engine) -> int:
    """Tokens of earlier generations an engine's recall can draft from."""
    from localspec.speculative.sources.recall import RecallDrafter

    return sum(len(src.memory.index) for src in engine.drafter.sources if isinstance(src, RecallDrafter))


@pytest.mark.slow  # SmolLM2, where drafting pays and the policy drafts a repeat from memory
def test_a_key_keeps_its_memory_across_requests(smollm2_f16, tmp_path):
    """The speed of a repeated request stays (recall drafts it), per key: B's first sending of A's request draws
    nothing from A's memory."""
    with serve_process(smollm2_f16, tmp_path, "--drafters", DRAFTERS, "--api-key", "key-a", "--api-key",
                       "key-b") as (url, _):
        first = _post(url, ASK, "key-a")
        recalled = _recalled(url, "key-a")
        other = _post(url, ASK, "key-b")
    assert recalled > 0
    assert _history(other) == _history(first) == 0


def test_cache_figures_are_a_keys_own(tiny_target):
    """B's prompt shares a long prefix with A's probe: A is told only what its own earlier prompts share."""
    probe = {**ASK, "messages": [ASK["messages"][0], {"role": "user", "content": f"my password is {SECRET}"}]}
    with _keyed_server(tiny_target) as (url, _):
        _post(url, probe, "key-b")  # B's request holds the secret A guesses
        told = _post(url, probe, "key-a")
        again = _post(url, probe, "key-a")
    assert told["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
    assert told["localspec"]["reused_prefix_tokens"] == told["localspec"]["restored_prefix_tokens"] == 0
    assert told["localspec"]["prefill_tokens"] == told["usage"]["prompt_tokens"]
    # A's own repeat: its own prompt is what it is told of (all but the last token, which is always computed).
    assert again["usage"]["prompt_tokens_details"]["cached_tokens"] == again["usage"]["prompt_tokens"] - 1


def test_one_key_or_none_is_one_tenant_with_the_cache_as_it_is(tiny_target):
    """Without keys, or with one, every client is the same tenant: one engine, the figures the engine's own."""
    with _keyed_server(tiny_target, keys=("only",)) as (url, service):
        _post(url, ASK, "only")
        again = _post(url, ASK, "only")
        assert not service.tenants.isolated and service.tenants.get("anything").engine is service.engine
        assert _remembered(service.engine) > 0
    assert again["usage"]["prompt_tokens_details"]["cached_tokens"] == again["usage"]["prompt_tokens"] - 1
