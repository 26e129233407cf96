"""Drafters (n-gram, history, schema, hybrid): proposals, and exactness of the whole loop under a grammar."""

from __future__ import annotations

import json

import pytest

from localspec.runtime.context import ContextSettings
from localspec.runtime.pair import load_pair
from localspec.speculative.builder import build_engine
from localspec.speculative.decoder import GenParams
from localspec.speculative.draft import DraftRequest
from localspec.speculative.drafting import TARGET_ONLY, DraftingConfig
from localspec.speculative.grammar import GrammarConstraint, tool_call_grammar
from localspec.speculative.indexes.prefix import common_prefix
from localspec.speculative.sampling import SamplingParams
from localspec.speculative.sources.ngram import NgramDrafter, NgramIndex
from localspec.speculative.sources.past_calls import CallHistory, HistoryDrafter
from tests.speculative.fakes import as_pair

TOOLS = [
    {"type": "function", "function": {"name": "read_file", "parameters": {
        "type": "object", "properties": {"path": {"type": "string"}, "start_line": {"type": "integer"}},
        "required": ["path"]}}},
    {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"},
                                         "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city", "unit"]}}},
]


def test_ngram_longest_then_most_recent_match():
    idx = NgramIndex(1)
    idx.sync([1, 2, 3, 9, 5, 2, 3, 7, 8, 2, 3])
    toks, m = idx.best_continuation([5, 2, 3], 4, exclude_from=11)
    assert (toks, m) == ([7, 8, 2, 3], 3)  # "5 2 3" matches longest at position 4..6
    toks, m = idx.best_continuation([0, 2, 3], 2, exclude_from=11)
    assert toks == [7, 8] and m == 2  # tie on length 2: the most recent earlier occurrence wins
    idx.sync([4, 4])  # rewritten sequence: index rebuilt
    assert idx.tokens == [4, 4]


@pytest.mark.parametrize("key_n", [1, 2])
def test_ngram_index_follows_rollbacks_like_a_fresh_one(key_n):
    """A rejected draft is dropped from the index (not rebuilt from scratch): same positions as a fresh index."""
    idx = NgramIndex(key_n)
    base = [5, 1, 2, 3, 1, 2] * 30
    for tail in ([9, 9, 1, 2], [1, 2, 3], [], [7], [3, 1, 2, 8, 8]):
        idx.sync(base + [4, 4, 4, 1, 2])  # a draft on top of the context ...
        idx.sync(base + tail)  # ... mostly rejected: the next context differs from it
        fresh = NgramIndex(key_n)
        fresh.sync(base + tail)
        assert idx.tokens == fresh.tokens and idx.pos == fresh.pos


def test_common_prefix_finds_a_new_case_after_the_same_system_prompt():
    system = list(range(100, 140))
    old = system + [1, 2, 3] * 100  # the last case's conversation
    new = system + [7, 8, 9] * 100  # the next case: same system prompt, all else differs
    assert common_prefix(old, new) == len(system)
    assert common_prefix(old, old[:-20] + [5] * 30) == len(old) - 20  # a rejected draft: where it began
    assert common_prefix(old, old + [4]) == len(old)


def test_ngram_runs_on_through_a_run_of_one_token():
    """'1000000': the copy of a run goes on as far as asked, not one token per pass; longer periods do not."""
    d = NgramDrafter(max_len=16)
    assert as_pair(d.candidate([7, 1, 0, 0, 0, 0], 6)) == ([0] * 6, 3)
    assert as_pair(d.candidate([7, 1, 0], 6)) == ([], 0)  # a single token is no run yet
    assert as_pair(d.candidate([1, 2, 3, 1, 2, 3], 6))[0] == [1, 2, 3]  # a list looping on items: the plain copy


def test_ngram_drafter_copies_from_context():
    d = NgramDrafter(max_len=5)
    ctx = [10, 11, 12, 13, 14, 15, 16, 20, 10, 11]
    draft = d.propose(DraftRequest(ctx, 8, SamplingParams()))
    assert draft.tokens == [12, 13, 14, 15, 16] and set(draft.origins) == {"ngram"}


def test_history_drafter_proposes_from_earlier_calls_and_reports_new_ones():
    vocab = {c: i + 1 for i, c in enumerate("abcdefghijklmnopqrstuvwxyz{}\":, _")}
    tok = lambda s: [vocab[c] for c in s]  # noqa: E731
    kept = []
    h = HistoryDrafter(tok, CallHistory(on_add=lambda text, tool: kept.append((tool, text))))
    h.add_call_tokens(tok('{"name": "read_file", "path": "a"}'), '{"name": "read_file", "path": "a"}', "read_file")
    assert kept == [("read_file", '{"name": "read_file", "path": "a"}')]  # the caller keeps it (agent/drafting_memory.py)
    again = HistoryDrafter(tok, CallHistory([text for _, text in kept]))  # a new session starts from the kept calls
    ctx = tok('xx {"name": "read_')
    draft = again.propose(DraftRequest(ctx, 6, SamplingParams()))
    assert draft.tokens == tok('file",')
    assert CallHistory(["a", "b", "c"], max_calls=2).calls == ["b", "c"]


def _constrained(engine, model, prompt, tools, n=160):
    g = tool_call_grammar(tools, prefix="<tool_call>\n", suffix="\n</tool_call>")
    return engine.generate(prompt, GenParams(max_tokens=n, draft_max=48), constraint=GrammarConstraint(model, g))


@pytest.mark.parametrize("drafters", [("schema",), ("schema", "history", "ngram"),
                                      ("schema", "history", "ngram", "model")])
def test_hybrid_is_exact_under_grammar_smollm2_f16(smollm2_f16, smollm2, drafters):
    """F16 target: every drafting mix gives exactly the constrained target-only output."""
    pair = load_pair(smollm2_f16, smollm2, ctx=ContextSettings(n_ctx=2048))
    from localspec.prompting.prompt import chat_prompt_tokens

    base = build_engine(pair, TARGET_ONLY)
    spec = build_engine(pair, DraftingConfig(drafters=tuple(drafters), draft_p_min=0.3))
    m = pair.target
    asks = ["Read the file notes/todo.txt", "What is the weather in Paris in celsius?",
            "Read the file src/main.py starting at line 10", "Weather in Oslo, fahrenheit please"]
    forced = 0
    for ask in asks:
        prompt = chat_prompt_tokens(m, [{"role": "user", "content": ask}], TOOLS)
        ref = _constrained(base, m, prompt, TOOLS)
        got = _constrained(spec, m, prompt, TOOLS)
        assert got.text == ref.text
        forced += got.stats.forced
        spec.remember_call(got.tokens, got.text)  # the history drafter, where there is one, learns the call
        json.loads(got.text.split("<tool_call>\n", 1)[1].rsplit("\n</tool_call>", 1)[0])
    assert forced > 20
    assert spec.totals.mean_accepted_length > 2.0
    assert set(spec.totals.drafters) >= {"schema"}


@pytest.mark.slow  # long sampled generations
def test_hybrid_sampling_is_valid_and_reproducible(tiny_pair_paths):
    pair = load_pair(*tiny_pair_paths, ctx=ContextSettings(n_ctx=1024))
    spec = build_engine(pair, DraftingConfig(drafters=("schema", "ngram", "history", "model"), draft_p_min=0.0))
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
                                         "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city", "unit"]}}}]
    g = tool_call_grammar(tools)
    prompt = pair.target.tokenize("the weather")
    params = GenParams(max_tokens=120, sampling=SamplingParams(temperature=0.9, seed=5), draft_max=32)
    a = spec.generate(prompt, params, constraint=GrammarConstraint(pair.target, g))
    b = spec.generate(prompt, params, constraint=GrammarConstraint(pair.target, g))
    assert a.text == b.text
    call = json.loads(a.text)
    assert call["name"] == "get_weather" and call["arguments"]["unit"] in ("celsius", "fahrenheit")
    assert a.stats.forced > 0


def test_hybrid_marks_grammar_forced_tokens_inside_copied_spans(smollm2):
    """A span copied from an earlier call runs through keys and braces the grammar forces: those tokens must be
    marked forced (verified without logits), exactly where the grammar forces them."""
    from localspec.runtime.model import Model
    from localspec.speculative.costs import CostModel
    from localspec.speculative.policy.hybrid import HybridDrafter

    m = Model(smollm2)
    tok = lambda s: m.tokenize(s, add_special=False)  # noqa: E731
    hybrid = HybridDrafter(costs=CostModel(), sources=[NgramDrafter()], tokenize=tok)
    hybrid.rates.learned.update({("ngram", d): 0.95 for d in (-1, 1, 2, 3, 4)})  # as if copying had worked well so far
    earlier = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}\n</tool_call>'
    grammar = tool_call_grammar(TOOLS, prefix="<tool_call>\n", suffix="\n</tool_call>")
    cons = GrammarConstraint(m, grammar)
    draft = hybrid.propose(DraftRequest(tok("Earlier: " + earlier + "\nNow:"), 48, SamplingParams(), cons))
    assert cons.consumed == 0  # the drafter leaves the grammar where it found it
    assert "ngram" in draft.origins
    first_copied = draft.origins.index("ngram")
    assert any(draft.forced[first_copied:])  # forced tokens after a copied one are still marked forced
    replay = GrammarConstraint(m, grammar)
    for t, forced in zip(draft.tokens, draft.forced):
        ff = replay.forced()
        assert forced == (bool(ff) and ff[0] == t)
        assert replay.consume(t)


def test_forced_end_of_call_needs_no_verify_pass(smollm2_f16):
    """Tokens forced all the way to the grammar's end are emitted without decoding them: the cache stops before
    them, and the next turn's prefill evaluates them with its prompt."""
    from localspec.prompting.prompt import chat_prompt_tokens

    pair = load_pair(smollm2_f16, ctx=ContextSettings(n_ctx=2048))
    m = pair.target
    base = build_engine(pair, TARGET_ONLY)
    spec = build_engine(pair, DraftingConfig(drafters=("schema",)))
    prompt = chat_prompt_tokens(m, [{"role": "user", "content": "Read the file notes/todo.txt"}], TOOLS)
    ref = _constrained(base, m, prompt, TOOLS)
    got = _constrained(spec, m, prompt, TOOLS)
    assert got.text == ref.text and got.stats.finish_reason == "grammar"
    toks = [t for t in got.tokens if t >= 0]
    tail = m.tokenize("\n</tool_call>", add_special=False)
    assert toks[-len(tail):] == tail
    # The tail's first token may come out of the last verify pass (forced, no logits); the rest needs no pass.
    rest = len(tail) - 1
    assert set(got.origins[-rest:]) == {"schema"}
    assert pair.target_ctx.n_past <= len(prompt) + len(toks) - rest
    assert got.stats.target_passes < got.stats.generated_tokens / 2
    follow = prompt + toks + m.tokenize("\nok", add_special=False)
    assert pair.target_ctx.prefill(follow) >= len(tail) + 2
    assert pair.target_ctx.n_past == len(follow)


def test_hybrid_guesses_forced_text_that_no_single_token_forces(smollm2):
    """After '"start_line":' the grammar forces a space, but no token: ' 1', ' 2', ... all start with it. The
    schema drafter proposes it as a guess (not marked forced: the target's logits must check it)."""
    pair = load_pair(smollm2, ctx=ContextSettings(n_ctx=1024))
    m = pair.target
    spec = build_engine(pair, DraftingConfig(drafters=("schema",)))
    cons = GrammarConstraint(m, tool_call_grammar(TOOLS))
    done = m.tokenize('{"name": "read_file", "arguments": {"path": "a", "start_line":', add_special=False)
    assert cons.consume_valid_prefix(done) == len(done)
    assert cons.forced() == [] and cons.forced_bytes() == b" "
    draft = spec.drafter.propose(DraftRequest(m.tokenize("x") + done, 16, SamplingParams(), cons))
    assert draft.tokens[:1] == m.tokenize(" ", add_special=False) and draft.forced[:1] == [False]
    assert draft.origins[0] == "schema" and cons.consumed == len(done)  # the grammar state is left as it was
