"""Guesses at a call's choice points, on SmolLM2's real tokenizer and real llguidance grammars: which tool (from
the request's words), where a value ends (closers that fit the grammar's string state), and how learned rates
recover."""

from localspec.prompting.prompt import chat_prompt_tokens
from localspec.runtime.model import Model
from localspec.speculative.costs import CostModel
from localspec.speculative.draft import Draft, DraftRequest
from localspec.speculative.grammar import GrammarConstraint, tool_call_grammar
from localspec.speculative.policy.hybrid import START, HybridDrafter
from localspec.speculative.policy.rates import prior
from localspec.speculative.sampling import SamplingParams
from localspec.speculative.sources.ngram import NgramDrafter
from localspec.speculative.sources.past_calls import HistoryDrafter
from localspec.speculative.sources.spans import SpanDrafter
from localspec.speculative.sources.toolnames import ToolNameDrafter, rank_tools
from tests.speculative.fakes import as_pair


def _tool(name, description, props, required=()):
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": props, "required": list(required)}}}


TOOLS = [
    _tool("read_file", "Read a text file from the workspace.", {"path": {"type": "string"}}, ["path"]),
    _tool("get_weather", "Current weather for a city.",
          {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
          ["city", "unit"]),
    _tool("run_shell", "Run a shell command in the workspace.", {"command": {"type": "string"}}, ["command"]),
]


def _at(m, tools, message, call, with_tools=True):
    """(context tokens, constraint) with `call` generated so far after a chat prompt asking `message`."""
    prompt = chat_prompt_tokens(m, [{"role": "user", "content": message}], tools)
    cons = GrammarConstraint(m, tool_call_grammar(tools), tools if with_tools else None)
    toks = m.tokenize(call, add_special=False)
    assert cons.consume_valid_prefix(toks) == len(toks)
    return prompt + toks, cons


def test_rank_tools_by_the_requests_words():
    assert rank_tools(TOOLS, "What's the weather in Paris?") == "get_weather"
    assert rank_tools(TOOLS, "Please read the file src/app.py") == "read_file"
    assert rank_tools(TOOLS, "Run `git status` for me.") == "run_shell"
    assert rank_tools(TOOLS, "Hello there") is None  # nothing in common: no guess
    twins = [_tool("a_search", "", {}), _tool("b_search", "", {})]
    assert rank_tools(twins, "search it") is None  # a tie: no guess


def test_tool_name_drafter_proposes_the_requested_tool_where_the_name_starts(smollm2):
    m = Model(smollm2)
    d = ToolNameDrafter(m.token_bytes, lambda t: m.tokenize(t, add_special=False, parse_special=False))
    ctx, cons = _at(m, TOOLS, "What's the weather in Paris?", '{"name": "')
    got, _ = as_pair(d.candidate(ctx, 16, cons))
    assert m.detokenize(got) == "get_weather"
    # Without the tools' definitions, or anywhere but the start of the name: nothing.
    ctx2, cons2 = _at(m, TOOLS, "What's the weather in Paris?", '{"name": "', with_tools=False)
    assert as_pair(d.candidate(ctx2, 16, cons2)) == ([], 0)
    ctx3, cons3 = _at(m, TOOLS, "What's the weather in Paris?", '{"name": "get_weather", "arguments": {"city": "')
    assert as_pair(d.candidate(ctx3, 16, cons3)) == ([], 0)


def test_hybrid_prefers_the_requested_tool_over_the_previous_call(smollm2):
    """History proposes the last call's tool; the request asks for another one: the request's tool is drafted
    (it only picks the name, and the previous call's long candidate no longer outbids it on length)."""
    m = Model(smollm2)
    tok = lambda s: m.tokenize(s, add_special=False)  # noqa: E731
    plain = lambda s: m.tokenize(s, add_special=False, parse_special=False)  # noqa: E731
    history = HistoryDrafter(tok)
    earlier = '{"name": "read_file", "arguments": {"path": "src/app.py"}}'
    history.add_call_tokens(tok(earlier), earlier, "read_file")
    hybrid = HybridDrafter(costs=CostModel(), sources=[history, ToolNameDrafter(m.token_bytes, plain)], tokenize=tok)
    ctx, cons = _at(m, TOOLS, "What's the weather in Paris?", '{"name": "')
    draft = hybrid.propose(DraftRequest(ctx, 32, SamplingParams(), cons))
    assert m.detokenize(draft.tokens).startswith("get_weather")
    assert hybrid._keys[0] == ("tool", START)


def test_hybrid_drafts_a_span_and_then_where_it_ends(smollm2):
    """A value copied from the request is followed in the same draft by its end: '",' here, since a required key
    follows (the grammar rules out closing the object). The key after it is forced: the draft stops before it
    (forced tokens ride with the next pass for free), and the verify pass needs no logits at its last row."""
    m = Model(smollm2)
    tok = lambda s: m.tokenize(s, add_special=False)  # noqa: E731
    plain = lambda s: m.tokenize(s, add_special=False, parse_special=False)  # noqa: E731
    hybrid = HybridDrafter(costs=CostModel(), sources=[SpanDrafter(m.token_bytes, plain)], tokenize=tok)
    ctx, cons = _at(m, TOOLS, "What's the weather in Paris?", '{"name": "get_weather", "arguments": {"city": "')
    draft = hybrid.propose(DraftRequest(ctx, 32, SamplingParams(), cons))
    assert m.detokenize(draft.tokens) == 'Paris",'
    assert hybrid._keys[-1] == ("close-next", START)
    assert draft.next_forced == tok(' "')[0]
    assert cons.consumed == len(tok('{"name": "get_weather", "arguments": {"city": "'))  # left as found


def test_closers_follow_the_string_state(smollm2):
    """Inside a string only a quote ends the value (',' or '}}' there would be string content); after a number,
    a comma or a brace does."""
    m = Model(smollm2)
    tok = lambda s: m.tokenize(s, add_special=False)  # noqa: E731
    hybrid = HybridDrafter(costs=CostModel(), tokenize=tok)
    tools = [_tool("f", "", {"s": {"type": "string"}, "n": {"type": "integer"}})]
    _, cons = _at(m, tools, "x", '{"name": "f", "arguments": {"s": "Par')
    assert cons.in_string()
    assert m.detokenize(hybrid._closer(cons, 8, 1.0, 0.0).toks).startswith('"')
    _, cons = _at(m, tools, "x", '{"name": "f", "arguments": {"n": 12')
    assert not cons.in_string()
    assert m.detokenize(hybrid._closer(cons, 8, 1.0, 0.0).toks)[:1] in (",", "}")
    # The string state follows rollbacks (drafts are consumed and rolled back all the time).
    _, cons = _at(m, tools, "x", '{"name": "f", "arguments": {"s":')
    assert not cons.in_string()
    more = tok(' "abc')
    assert cons.consume_valid_prefix(more) == len(more) and cons.in_string()
    cons.rollback(len(more))
    assert not cons.in_string()
    assert cons.consume_valid_prefix(more) == len(more) and cons.in_string()


def test_weak_matches_and_learned_rates_drift_back():
    assert NgramDrafter().bucket(1) == 1 and NgramDrafter().bucket(8) == 0
    hybrid = HybridDrafter(costs=CostModel())
    assert hybrid.rate("ngram", START - 1) < hybrid.rate("ngram", START)  # a weak match starts less sure
    hybrid.rates.learned[("ngram", START)] = 0.01  # shut out after a run of misses ...
    for _ in range(100):
        hybrid.observe(Draft(), 0)  # ... and not drafted since
    assert 0.3 < hybrid.rate("ngram", START) < prior("ngram", START)


def test_a_likelier_guess_at_a_value_beats_a_longer_copy(smollm2):
    """At a value's start the request's path (the likelier source here) is drafted, although prompt lookup's copy
    of an earlier call runs on for many more tokens: different guesses are compared over the same length."""
    m = Model(smollm2)
    tok = lambda s: m.tokenize(s, add_special=False)  # noqa: E731
    plain = lambda s: m.tokenize(s, add_special=False, parse_special=False)  # noqa: E731
    earlier = '{"name": "read_file", "arguments": {"path": "tests/test_app.py", "start_line": 1, "end_line": 100}}'
    tools = [_tool("read_file", "Read a text file.", {"path": {"type": "string"}, "start_line": {"type": "integer"},
                                                      "end_line": {"type": "integer"}}, ["path"])]
    prompt = chat_prompt_tokens(m, [{"role": "system", "content": "Earlier call: " + earlier},
                                    {"role": "user", "content": "Now show me src/cli.py."}], tools)
    cons = GrammarConstraint(m, tool_call_grammar(tools), tools)
    call = tok('{"name": "read_file", "arguments": {"path": "')
    assert cons.consume_valid_prefix(call) == len(call)
    hybrid = HybridDrafter(costs=CostModel(), sources=[NgramDrafter(), SpanDrafter(m.token_bytes, plain)], tokenize=tok)
    hybrid.rates.learned.update({("span", START): 0.6, ("ngram", START): 0.58})  # about as sure: length decided
    draft = hybrid.propose(DraftRequest(prompt + call, 32, SamplingParams(), cons))
    assert m.detokenize(draft.tokens).startswith("src/cli.py")
    assert hybrid._keys[0] == ("span", START)
