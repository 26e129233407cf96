"""Argument values proposed from the request's spans, on SmolLM2's real tokenizer and a real grammar."""

from localspec.prompting.prompt import chat_prompt_tokens
from localspec.runtime.model import Model
from localspec.speculative.grammar import GrammarConstraint, tool_call_grammar
from localspec.speculative.sources.spans import SpanDrafter, request_spans
from tests.speculative.fakes import as_pair

TOOLS = [{"type": "function", "function": {"name": "read_file", "parameters": {
    "type": "object", "properties": {"path": {"type": "string"}, "start_line": {"type": "integer"},
                                     "end_line": {"type": "integer"}}, "required": ["path"]}}}]


def test_request_spans_in_order_most_specific_first():
    assert request_spans("Read lines 74 to 114 of src/app.py.") == ["74", "114", "src/app.py"]
    assert request_spans("Run `git log -5` and search for 'def main' in README.md") == \
        ["git log -5", "def main", "README.md"]
    assert request_spans("What's the weather in New York? Tokyo too.") == ["New York"]  # not sentence-initial


def test_span_drafter_fills_values_in_order_under_the_grammar(smollm2):
    m = Model(smollm2)
    d = SpanDrafter(m.token_bytes, lambda t: m.tokenize(t, add_special=False, parse_special=False))
    prompt = chat_prompt_tokens(m, [{"role": "user", "content": "Read lines 74 to 114 of src/app.py."}], TOOLS)
    grammar = tool_call_grammar(TOOLS)
    call = '{"name": "read_file", "arguments": {"path": "'
    cons = GrammarConstraint(m, grammar)
    toks = m.tokenize(call, add_special=False)
    assert cons.consume_valid_prefix(toks) == len(toks)
    # A string value: the numbers do not fit there (the grammar says so), the path does.
    got, _ = as_pair(d.candidate(prompt + toks, 16, cons))
    assert m.detokenize(got) == "src/app.py"
    # An integer value after the path was used: the first number.
    rest = m.tokenize('src/app.py", "start_line":', add_special=False)
    assert cons.consume_valid_prefix(rest) == len(rest)
    got, _ = as_pair(d.candidate(prompt + toks + rest, 16, cons))
    assert m.detokenize(got).strip() == "74"
    more = m.tokenize(' 74, "end_line":', add_special=False)
    assert cons.consume_valid_prefix(more) == len(more)
    got, _ = as_pair(d.candidate(prompt + toks + rest + more, 16, cons))
    assert m.detokenize(got).strip() == "114"  # 74 is used already
    # Not at a value start: nothing.
    assert as_pair(d.candidate(prompt + m.tokenize('{"name', add_special=False), 16)) == ([], 0)
