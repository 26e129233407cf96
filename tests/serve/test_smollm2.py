"""`localspec serve` with a real instruction-tuned chat model (SmolLM2-135M-Instruct), where the chat template and
the model's own choices matter: structured output with free-text fields and a tool call with a string argument."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from tests.serve_helpers import client, running_server

pytestmark = pytest.mark.slow


class Capital(BaseModel):
    country: str
    capital: str


WEATHER = [{"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]


@pytest.fixture(scope="module")
def smol_server(smollm2):
    with running_server(smollm2, smollm2, model_id="smollm2", n_ctx=1024) as (url, service):
        yield url, service


def test_parse_pydantic_model(smol_server):
    url, _ = smol_server
    r = client(url).chat.completions.parse(
        model="smollm2", max_tokens=48, response_format=Capital,
        messages=[{"role": "user", "content": "What is the capital of France? Reply in JSON."}])
    parsed = r.choices[0].message.parsed
    assert isinstance(parsed, Capital) and "paris" in parsed.capital.lower()
    assert json.loads(r.choices[0].message.content) == parsed.model_dump()
    spec = r.model_extra["localspec"]
    assert spec["drafted"] > 0 and spec["accepted"] > 0  # the draft (the same model) agrees with the target


def test_required_tool_call_with_string_argument(smol_server):
    url, _ = smol_server
    r = client(url).chat.completions.create(
        model="smollm2", max_tokens=48, tools=WEATHER, tool_choice="required",
        messages=[{"role": "user", "content": "What's the weather like in Paris today?"}])
    assert r.choices[0].finish_reason == "tool_calls"
    (call,) = r.choices[0].message.tool_calls
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments)["city"].lower() == "paris"
