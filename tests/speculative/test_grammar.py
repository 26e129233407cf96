"""Schema-constrained tool calls with llguidance on real models: always valid, rollback-safe, forced tokens."""

from __future__ import annotations

import json

import pytest

from localspec.errors import ConfigError
from localspec.runtime.context import Context, ContextSettings
from localspec.runtime.model import Model
from localspec.speculative.decoder import GenParams, SpecEngine
from localspec.speculative.grammar import GrammarConstraint, check_grammar, json_schema_grammar, tool_call_grammar

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
    from localspec.speculative.sampling import SamplingParams

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


def test_grammars_the_engine_cannot_follow_are_refused(smollm2):
    """Issue 38.8: llguidance accepts these grammars, and the engine then stopped at once with nothing generated."""
    from localspec.speculative.grammar import followable

    m = Model(smollm2)
    for schema, why in (({"type": "string", "pattern": "^(a{1000}){1000}$"}, "too many expressions"),
                        ({"$ref": "#"}, "cannot be followed"),
                        ({"type": "object", "properties": {"x": {"$ref": "#"}}, "required": ["x"]}, "Too many items")):
        grammar = json_schema_grammar(schema)
        assert why in followable(grammar, m), schema
        with pytest.raises(ConfigError, match="invalid schema"):
            check_grammar(grammar, m)
    assert followable(json_schema_grammar({"type": "string", "pattern": "^[0-9]{5}$"}), m) == ""


def test_limits_bound_unbounded_strings_and_arrays(tiny_target):
    """A model stuck in a loop still ends with a complete call once strings/arrays get default bounds."""
    from localspec.speculative.sampling import SamplingParams

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


def test_bound_numbers_keeps_numbers_finite(smollm2):
    """With bound_numbers a looping model cannot write digits forever; bounds the schema sets are kept."""
    m = Model(smollm2)
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {
        "n": {"type": "integer"}, "x": {"type": "number"}, "k": {"type": "integer", "maximum": 5}},
        "required": ["n", "x", "k"]}}}]

    def ok(grammar, n, x, k):
        cons = GrammarConstraint(m, grammar)
        toks = m.tokenize(f'{{"name": "f", "arguments": {{"n": {n}, "x": {x}, "k": {k}}}}}', add_special=False)
        return cons.consume_valid_prefix(toks) == len(toks) and cons.accepting()

    bounded = tool_call_grammar(tools, bound_numbers=True)
    assert ok(bounded, 9007199254740991, 37.7749295, 5)
    assert not ok(bounded, 9007199254740992, 1.5, 5)  # beyond 2^53 - 1
    assert not ok(bounded, "1" * 40, 1.5, 5)
    assert not ok(bounded, 1, "0." + "0" * 30, 5)  # a loop in the decimals
    assert not ok(bounded, 1, 1.5, 6)  # the schema's own maximum still holds
    unbounded = tool_call_grammar(tools)
    assert ok(unbounded, "1" * 40, "0." + "0" * 30, 5)


def test_wrap_up_closes_a_looping_call_before_max_tokens(tiny_target):
    """A model that would run past max_tokens inside a value still ends with a complete call with wrap_up, and
    speculative decoding makes the same picks as plain decoding."""
    from localspec.runtime.pair import load_pair
    from localspec.speculative.builder import build_engine
    from localspec.speculative.drafting import DraftingConfig

    tools = [{"type": "function", "function": {"name": "tag", "parameters": {"type": "object", "properties": {
        "label": {"type": "string"}, "items": {"type": "array", "items": {"type": "string"}}},
        "required": ["label", "items"]}}}]
    pair = load_pair(tiny_target, ctx=ContextSettings(n_ctx=2048))
    m = pair.target
    g = tool_call_grammar(tools, parallel=True, max_calls=3)
    prompt = m.tokenize("the")
    cut = GenParams(max_tokens=60)
    plain = SpecEngine(pair.target_ctx).generate(prompt, cut, constraint=GrammarConstraint(m, g))
    assert plain.stats.finish_reason == "length"  # without wrap-up the call is cut off
    wrapped = GenParams(max_tokens=60, wrap_up=30)
    base = SpecEngine(pair.target_ctx).generate(prompt, wrapped, constraint=GrammarConstraint(m, g))
    assert base.stats.finish_reason in ("grammar", "stop") and base.stats.generated_tokens <= 60
    calls = [json.loads(line) for line in base.text.split("\n")]
    assert 1 <= len(calls) <= 3 and all(c["name"] == "tag" for c in calls)
    spec = build_engine(pair, DraftingConfig(drafters=("schema", "history", "ngram")))
    got = spec.generate(prompt, wrapped, constraint=GrammarConstraint(m, g))
    assert got.text == base.text


def test_wrap_up_prefers_ending_over_another_parallel_call(tiny_target):
    """Once a parallel call is complete, wrap-up mode allows ending the generation but not another call."""
    tools = [{"type": "function", "function": {"name": "tag", "parameters": {"type": "object", "properties": {
        "label": {"type": "string"}}, "required": ["label"]}}}]
    m = Model(tiny_target)
    cons = GrammarConstraint(m, tool_call_grammar(tools, parallel=True, max_calls=8))
    done = m.tokenize('{"name": "tag", "arguments": {"label": "a"}}', add_special=False)
    assert cons.consume_valid_prefix(done) == len(done)
    newline = m.tokenize("\n", add_special=False)[0]
    assert cons.allowed()[newline]  # another call may follow...
    closing = cons.closing_allowed()
    assert not closing[newline]  # ...but not when wrapping up
    assert any(closing[t] for t in m.eog_tokens)


def test_wrap_up_ends_a_string_before_closing_braces(tiny_target):
    """Inside a string, '}' is valid content, so wrap-up must prefer the quote that ends the string; outside it,
    a comma ends a number when a required key still has to come."""
    tools = [{"type": "function", "function": {"name": "tag", "parameters": {"type": "object", "properties": {
        "label": {"type": "string"}, "n": {"type": "integer"}, "k": {"type": "integer"}},
        "required": ["label", "n", "k"]}}}]
    m = Model(tiny_target)
    cons = GrammarConstraint(m, tool_call_grammar(tools))
    one = lambda text: m.tokenize(text, add_special=False)  # noqa: E731
    part = one('{"name": "tag", "arguments": {"label": "a b \\" c')
    assert cons.consume_valid_prefix(part) == len(part)
    brace, quote = one("}")[0], one('"')[0]
    assert cons.allowed()[brace]  # a brace is string content here...
    closing = cons.closing_allowed()
    assert closing[quote] and not closing[brace]  # ...but wrap-up ends the string instead
    more = one('", "n": 12')
    assert cons.consume_valid_prefix(more) == len(more)
    closing = cons.closing_allowed()
    assert closing[one(",")[0]] and not closing[one("3")[0]]
    cons.rollback(len(more))
    assert cons.closing_allowed()[quote] and not cons.closing_allowed()[brace]


def test_rows_picked_on_the_device_fall_back_to_whole_rows_the_grammar_needs(smollm2_f16):
    """Greedy rows picked on the device (their 8 best tokens) under a grammar: where none of those is allowed (an
    enum of words the model would never write after a story prompt) the row is computed again whole, and the call
    is token for token what constrained decoding on whole rows writes, target-only and speculative alike."""
    from localspec.runtime.pair import load_pair
    from localspec.speculative.builder import build_engine
    from localspec.speculative.drafting import DraftingConfig

    pair = load_pair(smollm2_f16, ctx=ContextSettings(n_ctx=1024, device_picks="on"))
    m = pair.target
    whole = SpecEngine(Context(m, ContextSettings(n_ctx=1024, device_picks="off")))
    plain = SpecEngine(pair.target_ctx)
    spec = build_engine(pair, DraftingConfig(drafters=("schema", "history", "ngram")))
    schema = {"type": "object", "properties": {
        "mood": {"type": "string", "enum": ["zqxv", "vqxz", "xxqq"]}, "sunny": {"type": "boolean"},
        "note": {"type": "string", "maxLength": 30}}, "required": ["mood", "sunny", "note"]}
    prompt = m.tokenize("Once upon a time, in a small village by the sea, there lived")
    params = GenParams(max_tokens=80)
    ref = whole.generate(prompt, params, constraint=GrammarConstraint(m, json_schema_grammar(schema)))
    assert json.loads(ref.text)["mood"] in schema["properties"]["mood"]["enum"]
    for engine in (plain, spec):
        before = pair.target_ctx.side_decodes
        got = engine.generate(prompt, params, constraint=GrammarConstraint(m, json_schema_grammar(schema)))
        assert got.text == ref.text
        assert pair.target_ctx.side_decodes > before  # the enum's first letters were nowhere near the top
    assert pair.target_ctx.picks_on_device == 8
