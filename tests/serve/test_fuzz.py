"""Fuzzing `localspec serve` with bodies whose values hold JSON inside strings inside JSON (tool-call arguments,
contents, descriptions, schemas), on a real server over tiny real GGUF models: every answer is a 200 or an
OpenAI-shaped 4xx, never a 500 (issue 27).

A seeded generator (no extra dependency), so a failure names the seed and the case index to replay it.
"""

from __future__ import annotations

import json
import random

import pytest

from tests.serve_helpers import TOOLS

httpx = pytest.importorskip("httpx")

SEED = 27
CASES = 160

# Pieces of text a hostile client sends: lone surrogates (escaped in the body, as valid JSON allows), control and
# invisible characters, marker text, characters outside the BMP, brackets that look like JSON, numbers too long to
# convert, JSON's non-constants.
ATOMS = ["", "x", "\ud800", "\udfff", "a\udc00b", "\ud83d\ude00", "\x00", "\x1b]52;c;SGVsbG8=\x07", "\u202e",
         "<|im_start|>system", "<tool_call>", "{", "}", "[", "]", '"', "\\", "NaN", "Infinity", "-Infinity",
         "9" * 5000, "-" + "1" * 4400, "1e999999", "0." + "0" * 5000 + "1", "true", "null"]


def _value(rng: random.Random, depth: int):
    kind = rng.randrange(9 if depth < 6 else 4)
    if kind == 0:
        return rng.choice(ATOMS) + rng.choice(ATOMS)
    if kind == 1:
        return rng.choice([0, -1, 1.5, 10 ** rng.randrange(1, 40), True, None])
    if kind == 2:
        return "[" * rng.randrange(1, 200_000) if rng.random() < 0.3 else rng.choice(ATOMS)
    if kind == 3:  # a number too long to convert, as raw JSON text inside a string
        return '{"a": ' + "7" * rng.randrange(4000, 6000) + "}"
    if kind == 4:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(0, 4))]
    if kind == 5:
        return {rng.choice(ATOMS) or "k": _value(rng, depth + 1) for _ in range(rng.randrange(0, 4))}
    if kind == 6:  # JSON inside a string: the nesting that body checks cannot see
        return json.dumps(_value(rng, depth + 1), ensure_ascii=rng.random() < 0.5)
    if kind == 7:  # deep nesting inside a string, deeper than any recursion limit
        n = rng.choice([63, 64, 65, 1000, 100_000])
        return "[" * n + "1" + "]" * n if rng.random() < 0.5 else '{"a": ' * n + "1" + "}" * n
    return json.dumps({"nested": json.dumps({"again": _value(rng, depth + 2)})})


def _message(rng: random.Random) -> dict:
    role = rng.choice(["user", "assistant", "tool", "system"])
    arguments = _value(rng, 0)
    if not isinstance(arguments, (str, dict)):
        arguments = json.dumps(arguments)
    msg: dict = {"role": role, "content": _value(rng, 0) if rng.random() < 0.8 else
                 [{"type": "text", "text": str(_value(rng, 0))}]}
    if role == "assistant" and rng.random() < 0.7:
        msg["tool_calls"] = [{"id": str(_value(rng, 3)), "type": "function",
                              "function": {"name": rng.choice(["set_light", "f", str(_value(rng, 3))]),
                                           "arguments": arguments}}]
        if rng.random() < 0.5:
            msg["content"] = None
    if role == "tool":
        msg["tool_call_id"] = str(_value(rng, 3))
    if role == "assistant" and rng.random() < 0.3:
        msg["reasoning_content"] = str(_value(rng, 0))
    return msg


def _body(rng: random.Random) -> dict:
    messages = [_message(rng) for _ in range(rng.randrange(1, 4))]
    if rng.random() < 0.5:
        messages.append({"role": "user", "content": "hi"})
    body: dict = {"model": "tiny", "messages": messages, "max_tokens": 1}
    if rng.random() < 0.5:
        tools = json.loads(json.dumps(TOOLS))
        tools[0]["function"]["description"] = str(_value(rng, 0))
        if rng.random() < 0.4:
            tools[1]["function"]["parameters"] = {"type": "object", "properties": {
                str(_value(rng, 4)): {"type": "string", "description": str(_value(rng, 2))}}}
        body["tools"] = tools
        body["tool_choice"] = rng.choice(["auto", "none", "required"])
    if rng.random() < 0.2:
        body["stop"] = [str(_value(rng, 3))]
    if rng.random() < 0.15:
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "x", "schema": {
            "type": "object", "properties": {"a": {"type": "string", "pattern": str(_value(rng, 3))[:200]}}}}}
    return body


@pytest.mark.slow  # a fuzz run
def test_no_body_of_nested_string_encoded_json_is_a_500(tiny_server):
    url, _ = tiny_server
    rng = random.Random(SEED)
    statuses: dict[int, int] = {}
    with httpx.Client(timeout=120) as http:
        for i in range(CASES):
            body = _body(rng)
            raw = json.dumps(body).encode()  # ASCII escapes: lone surrogates travel as \ud800, as JSON allows
            r = http.post(url + "/v1/chat/completions", content=raw, headers={"content-type": "application/json"})
            statuses[r.status_code] = statuses.get(r.status_code, 0) + 1
            assert r.status_code < 500, f"seed {SEED} case {i}: {r.status_code} {r.text[:300]}"
            if r.status_code != 200:
                err = r.json()["error"]
                assert set(err) == {"message", "type", "param", "code"} and "Traceback" not in err["message"]
    # The generator reaches both sides: some bodies are answered, some refused.
    assert statuses.get(200, 0) > 5 and statuses.get(400, 0) > 5, statuses
