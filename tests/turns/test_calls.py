"""Agent call plumbing: cutting generated tokens at a call trigger, the grammar for the rest of the call, reading
constrained output back (real tiny GGUF tokenizer, real llguidance)."""

from __future__ import annotations

import pytest

from localspec.prompting.formats import GENERIC, LLAMA3_JSON, MISTRAL
from localspec.runtime.model import Model
from localspec.speculative.grammar import GrammarConstraint
from localspec.tools import Toolbox
from localspec.turns.calls import call_grammar, cut_at_trigger, new_call_id, parse_constrained


@pytest.fixture(scope="module")
def model(tiny_target):
    m = Model(tiny_target)
    yield m
    m.close()


@pytest.fixture(scope="module")
def specs(tmp_path_factory):
    tb = Toolbox(tmp_path_factory.mktemp("ws"))
    return [s for s in tb.specs() if s["function"]["name"] in ("read_file", "list_dir")]


def _toks(model, text):
    return model.tokenize(text, add_special=False, parse_special=True)


def test_call_ids_are_nine_alphanumerics():
    ids = {new_call_id() for _ in range(50)}
    assert len(ids) == 50
    assert all(len(i) == 9 and i.isalnum() and i.isascii() for i in ids)


def test_cut_at_trigger_keeps_tokens_ending_with_the_trigger(model):
    tokens = _toks(model, "I will look.<tool_call>")
    start = cut_at_trigger(model, GENERIC, tokens)
    assert start.before == "I will look."
    assert start.emitted == "<tool_call>"  # the grammar writes the rest of the prefix ("\n") and the call
    assert start.tokens == tokens


def test_cut_at_trigger_goes_back_when_text_ran_past_the_prefix(model):
    tokens = _toks(model, 'ok <tool_call>\n{"na')
    start = cut_at_trigger(model, GENERIC, tokens)
    assert (start.before, start.emitted) == ("ok ", "")
    assert model.detokenize(start.tokens) == "ok "


def test_cut_at_trigger_inside_the_call_body_llama3(model):
    # Llama 3's trigger is the start of the JSON body itself: the call is regenerated from before it.
    tokens = _toks(model, 'text {"name": "read_file"')
    start = cut_at_trigger(model, LLAMA3_JSON, tokens)
    assert (start.before, start.emitted) == ("text ", "")
    assert model.detokenize(start.tokens) == "text "


def test_cut_at_trigger_none_without_a_call(model):
    assert cut_at_trigger(model, GENERIC, _toks(model, "just an answer")) is None


def test_grammar_continues_from_the_emitted_trigger(model, specs):
    constraint = GrammarConstraint(model, call_grammar(GENERIC, specs, "<tool_call>", parallel=False))
    rest = '\n{"name": "read_file", "arguments": {"path": "a.txt"}}\n</tool_call>'
    tokens = _toks(model, rest)
    assert constraint.consume_valid_prefix(tokens) == len(tokens)
    assert constraint.accepting()
    bad = GrammarConstraint(model, call_grammar(GENERIC, specs, "<tool_call>", parallel=False))
    wrong = _toks(model, '\n{"name": "read_file", "arguments": {"path": 3}}')
    assert bad.consume_valid_prefix(wrong) < len(wrong)  # the schema refuses a number for "path"


def test_parallel_grammar_repeats_the_whole_prefix(model, specs):
    constraint = GrammarConstraint(model, call_grammar(GENERIC, specs, "<tool_call>", parallel=True))
    text = ('\n{"name": "list_dir", "arguments": {}}\n</tool_call>\n'
            '<tool_call>\n{"name": "read_file", "arguments": {"path": "b"}}\n</tool_call>')
    tokens = _toks(model, text)
    assert constraint.consume_valid_prefix(tokens) == len(tokens)
    assert constraint.accepting()


def test_parse_constrained_reads_calls_in_order():
    text = ('<tool_call>\n{"name": "read_file", "arguments": {"path": "a"}}\n</tool_call>\n'
            '<tool_call>\n{"name": "list_dir", "arguments": {}}\n</tool_call>')
    calls, error = parse_constrained(GENERIC, text)
    assert error is None
    assert calls == [("read_file", {"path": "a"}), ("list_dir", {})]


def test_parse_constrained_reports_a_cut_off_call_and_keeps_complete_ones():
    text = ('<tool_call>\n{"name": "read_file", "arguments": {"path": "a"}}\n</tool_call>\n'
            '<tool_call>\n{"name": "read_file", "arguments": {"pa')
    calls, error = parse_constrained(GENERIC, text)
    assert calls == [("read_file", {"path": "a"})]
    assert "cut off" in error
    # A complete JSON object whose closing tag was cut is still a call.
    calls, error = parse_constrained(GENERIC, '<tool_call>\n{"name": "list_dir", "arguments": {}}\n</tool')
    assert (calls, error) == ([("list_dir", {})], None)


def test_parse_constrained_other_formats():
    calls, error = parse_constrained(MISTRAL, '[TOOL_CALLS][{"name": "list_dir", "arguments": {"path": "."}}]')
    assert (calls, error) == ([("list_dir", {"path": "."})], None)
    calls, error = parse_constrained(LLAMA3_JSON, '{"name": "read_file", "arguments": {"path": "x"}}')
    assert (calls, error) == ([("read_file", {"path": "x"})], None)
    calls, error = parse_constrained(GENERIC, "no call")
    assert calls == [] and "no tool call" in error
