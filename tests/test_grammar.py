"""Schema-constrained tool calls with llguidance on real models: always valid, rollback-safe, forced tokens."""

from __future__ import annotations

import json

import pytest

from localspec.errors import ConfigError
from localspec.runtime.context import Context, ContextSettings
from localspec.runtime.model import Model
from localspec.spec.engine import GenParams, SpecEngine
from localspec.spec.grammar import GrammarConstraint, check_grammar, json_schema_grammar, tool_call_grammar

TOOLS = [
    {"type": "function", "function": {"name": "read_file", "parameters": {
        "type": "object", "properties": {"path": {"type": "string", "maxLength": 24}, "start_line": {"type": "integer"}},
        "required": ["path"]}}},
    {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string", "maxLength": 24},
                                         "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city", "unit"]}}},
]


def _valid_call(call: dict) -> bool:
    if call["name"] == "read_file":
        a = call["arguments"]
        return set(a) <= {"path", "start_line"} and isinstance(a["path"], str) and \
            isinstance(a.get("start_line", 0), int)
    a = call["arguments"]
    return set(a) == {"city", "unit"} and a["unit"] in ("celsius", "fahrenheit")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tiny_model_output_is_always_a_valid_call(tiny_target, seed):
    """A random-weight model would write garbage; under the constraint it can only write valid calls."""
    m = Model(tiny_target)
    eng = SpecEngine(Context(m, ContextSettings(n_ctx=1024)))
    g = tool_call_grammar(TOOLS, prefix="<tool_call>\n", suffix="\n</tool_call>")
    from localspec.spec.sampling import SamplingParams

    gen = eng.generate(m.tokenize("the file"), GenParams(max_tokens=200, sampling=SamplingParams(
        temperature=1.0, seed=seed, top_k=0, top_p=1.0, min_p=0.0)), constraint=GrammarConstraint(m, g))
    assert gen.stats.finish_reason == "grammar", gen.text
    assert gen.text.startswith("<tool_call>\n") and gen.text.endswith("\n</tool_call>")
    call = json.loads(gen.text[len("<tool_call>\n"):-len("\n</tool_call>")])
    assert _valid_call(call)


def test_forced_tokens_and_rollback(smollm2):
    m = Model(smollm2)
    c = GrammarConstraint(m, tool_call_grammar(TOOLS, prefix="<tool_call>\n", suffix="\n</tool_call>"))
    forced = c.forced()
    assert m.detokenize(forced, special=True).startswith("<tool_call>\n{\"name\": \"")
    for t in forced:
        assert c.consume(t)
    name = m.tokenize('get_weather", "arguments": {"city": "Paris"', add_special=False)
    n = c.consume_valid_prefix(name)
    assert n == len(name)
    after = c.forced()  # the unit key is forced once city is done and unit is required
    assert m.detokenize(after, special=True).startswith(', "unit": "')
    mask_before = c.allowed().copy()
    c.consume(after[0])
    c.rollback(1)
    assert (c.allowed() == mask_before).all()
    c.rollback(n)
    assert c.forced() == []  # back at the tool-name choice: both tools possible
    bad = m.tokenize("xyz", add_special=False)
    assert not c.consume(bad[0]) and c.consume_valid_prefix(bad) == 0
    assert not c.matcher.is_error()  # refused tokens never poison the matcher


def test_unique_name_prefix_is_forced(smollm2):
    m = Model(smollm2)
    c = GrammarConstraint(m, tool_call_grammar(TOOLS))
    for t in c.forced():
        c.consume(t)
    first = m.tokenize("get", add_special=False)
    c.consume_valid_prefix(first)
    # Forced up to the value: the token after ":" may merge the space, quote and first letters.
    assert m.detokenize(c.forced(), special=True).startswith("_weather\", \"arguments\": {\"city\":")


def test_json_schema_and_invalid_schema(smollm2):
    m = Model(smollm2)
    g = json_schema_grammar({"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]})
    check_grammar(g, m)
    with pytest.raises(ConfigError, match="invalid"):
        GrammarConstraint(m, json_schema_grammar({"type": "object", "properties": {"x": {"type": "nonsense"}}}))


def test_limits_bound_unbounded_strings_and_arrays(tiny_target):
    """A model stuck in a loop still ends with a complete call once strings/arrays get default bounds."""
    from localspec.spec.sampling import SamplingParams

    tools = [{"type": "function", "function": {"name": "tag", "parameters": {"type": "object", "properties": {
        "label": {"type": "string"}, "items": {"type": "array", "items": {"type": "string"}}},
        "required": ["label", "items"]}}}]
    m = Model(tiny_target)
    eng = SpecEngine(Context(m, ContextSettings(n_ctx=2048)))
    g = tool_call_grammar(tools, max_string=12, max_items=3)
    gen = eng.generate(m.tokenize("the"), GenParams(max_tokens=400, sampling=SamplingParams(
        temperature=1.0, seed=3, top_k=0, top_p=1.0, min_p=0.0)), constraint=GrammarConstraint(m, g))
    assert gen.stats.finish_reason == "grammar"
    args = json.loads(gen.text)["arguments"]
    assert len(args["label"]) <= 12 and len(args["items"]) <= 3 and all(len(s) <= 12 for s in args["items"])
