"""The statistics panel's numbers (fast table tests): tokens per pass, the speedup estimate, the slow-speculation
hint, the one-line summary, and the help screen defining every figure the panel shows."""

from __future__ import annotations

from dataclasses import replace

import pytest

from localspec.speculative.stats import Stats, estimate_speedup, tokens_per_pass
from localspec.tui.livestats import SessionView, StatsView, slow_hint, summary_line


@pytest.mark.parametrize("tokens, passes, decoding_s, single_s, expected", [
    (100, 100, 1.0, 0.01, 1.0),  # target alone: one token per pass, as fast as itself
    (145, 100, 1.0, 0.01, 1.45),  # 1.45 tokens/pass with cheap drafting and verify passes that cost one token's pass
    (145, 100, 1.45, 0.01, 1.0),  # the same, but drafting and wider passes ate the gain: honestly 1.00x
    (105, 100, 0.5, 0.01, 1.05),  # a single-token cost measured on a cold machine would say 2.1x: capped at 1.05
    (100, 100, 2.0, 0.01, 0.5),  # an expensive draft model: slower than the target alone
    (10, 0, 1.0, 0.01, 0.0),  # no pass counted yet: not measured
    (10, 5, 0.0, 0.01, 0.0),
    (10, 5, 1.0, 0.0, 0.0),
])
def test_estimated_speedup(tokens, passes, decoding_s, single_s, expected):
    got = estimate_speedup(tokens, passes, decoding_s, single_s)
    assert got == pytest.approx(expected)
    assert got <= tokens_per_pass(tokens, passes) + 1e-12  # never more than tokens per pass


def test_stats_object_uses_the_same_definitions():
    # No plain pass measured: the fitted single-token cost plus this run's judging time per pass, plus the loop's
    # time per token, against the whole generation time.
    s = Stats(generated_tokens=145, target_passes=100, drafted=60, accepted=45, draft_s=0.2, verify_s=1.3, decode_s=1.0,
              target_token_s=0.01, wall_s=1.6)
    step = 0.01 + 0.3 / 100 + 0.1 / 145
    assert s.mean_accepted_length == pytest.approx(1.45)
    assert s.plain_step_s == pytest.approx(step)
    assert s.estimated_speedup == pytest.approx(145 * step / 1.6)
    assert s.to_dict()["estimated_speedup"] == round(s.estimated_speedup, 3)


@pytest.mark.parametrize("plain, drafted, draft_s, other_s, expected", [
    # Target alone: nothing drafted, so this was target-only decoding: exactly 1.00x, whatever the timings.
    (100, 0, 0.0, 0.1, 1.0),
    (100, 0, 0.5, 3.0, 1.0),
    # Prose where drafting only cost: 0.1 s of lookups and ten passes with a wasted row (12 ms instead of 11).
    (90, 10, 0.1, 0.1, 100 * (0.010 + 0.001 + 0.001) / (0.1 + 90 * 0.011 + 10 * 0.012 + 0.1)),
])
def test_estimate_prices_a_token_at_a_plain_step(plain, drafted, draft_s, other_s, expected):
    verify_s = plain * 0.011 + drafted * 0.012
    s = Stats(generated_tokens=100, target_passes=plain + drafted, drafted=drafted, draft_s=draft_s, verify_s=verify_s,
              decode_s=plain * 0.010 + drafted * 0.011, target_token_s=0.010, plain_passes=plain,
              plain_verify_s=plain * 0.011, plain_decode_s=plain * 0.010, wall_s=draft_s + verify_s + other_s)
    assert s.estimated_speedup == pytest.approx(expected)


def test_a_stalled_pass_does_not_make_target_only_decoding_look_slower():
    """The single-token cost is the median of the passes measured lately (target_token_s): one pass stalled by
    another process inflates the run's time, not the price of a token, so the estimate shows the stall as a loss."""
    s = Stats(generated_tokens=100, target_passes=100, drafted=3, verify_s=1.1 + 0.5, decode_s=1.0 + 0.5,
              target_token_s=0.010,
              plain_passes=100, plain_verify_s=1.6, plain_decode_s=1.5, wall_s=1.6)
    assert s.estimated_speedup == pytest.approx(100 * 0.011 / 1.6)


def view(generated=200, speedup=0.7, drafters=None, passes=180, drafted=100, switched_off=None):
    drafters = {"model": (100, 20)} if drafters is None else drafters
    return StatsView(generated=generated, drafted=drafted, accepted=20 if drafted else 0, target_passes=passes,
                     acceptance_rate=0.2 if drafted else 0.0, mean_accepted_length=generated / passes,
                     tokens_per_second=12.5, estimated_speedup=speedup, drafters=drafters,
                     switched_off=switched_off or {})


def test_slow_hint_when_drafting_measurably_cost():
    hint = slow_hint(view())
    assert hint and "0.70x" in hint and "draft model" in hint and "slower than the target alone" in hint
    ngram = slow_hint(view(drafters={"ngram": (10, 1)}, drafted=10))
    assert "ngram drafter off" in ngram and "drafters.ngram" in ngram  # names what to switch off
    # the one that drafted and lost the most is named, not the first in the table
    assert "schema" not in slow_hint(view(drafters={"schema": (40, 39), "ngram": (30, 2)}, drafted=70))
    assert slow_hint(view(generated=30, passes=29)) is not None  # a short reply is enough (was 64 tokens)
    assert slow_hint(view(generated=20, passes=19)) is None  # too few tokens to judge
    assert slow_hint(view(speedup=1.2)) is None
    assert slow_hint(view(speedup=0.97)) is None  # within the estimate's own noise
    assert slow_hint(view(speedup=None)) is None  # not measured is not slow
    assert slow_hint(view(drafted=0, drafters={}, speedup=1.0)) is None  # nothing drafted: nothing to switch off
    assert slow_hint(view(drafted=3, drafters={"ngram": (3, 0)})) is None  # too little drafted to blame drafting
    assert slow_hint(None) is None


def test_nothing_drafted_is_one_and_no_data_is_a_dash():
    """Issue 28: 1.00x when nothing is drafted (target-only, or drafters that found nothing), "–" (not 0.00x, not
    0%) until there is data, for the estimate and for 0/0 acceptance alike."""
    from localspec.tui.widgets.stats_panel import turn_table

    plain = Stats(generated_tokens=40, target_passes=40, verify_s=0.5, decode_s=0.45, wall_s=0.6, prefill_s=0.05)
    assert plain.estimated_speedup == 1.0 and plain.to_dict()["estimated_speedup"] == 1.0
    unpriced = Stats(generated_tokens=40, target_passes=20, drafted=30, accepted=20, verify_s=0.5, wall_s=0.6)
    assert unpriced.estimated_speedup is None and unpriced.to_dict()["estimated_speedup"] is None
    assert Stats().estimated_speedup is None
    v = StatsView.of(plain)
    cells = dict(zip((str(c) for c in turn_table(v).columns[0]._cells),
                     (str(c) for c in turn_table(v).columns[1]._cells)))
    assert cells["acceptance"] == "–" and cells["est. speedup"] == "1.00x"
    assert "– accepted" in summary_line(v) and "est. 1.00x" in summary_line(v)
    assert "accepted 0/0 (–)" in plain.summary() and "est. speedup 1.00x" in plain.summary()
    assert "est. speedup –" in unpriced.summary()
    assert StatsView.of(unpriced).speedup_text == "–"


def test_switched_off_reasons_reach_the_cli_summary_and_the_panel():
    why = "a draft token costs 22.1 ms against a 26.2 ms target step"
    s = Stats(generated_tokens=11, target_passes=10, drafted=11, accepted=1, switched_off={"model": why},
              drafting_notes={"model": why})
    assert f"model drafter switched off: {why}" in s.summary()
    # The command line says a decision once (the reply it was made in); the panel shows what stands.
    s.drafting_notes = {}
    assert "switched off" not in s.summary()
    v = StatsView.of(s)
    assert v.switched_off == {"model": why} and "off: model" in summary_line(v)
    from localspec.tui.widgets.stats_panel import switched_off_text

    assert why in switched_off_text(v)
    assert switched_off_text(view()) is None


def test_a_translated_draft_is_said_on_the_panel():
    from localspec.tui.widgets.stats_panel import turn_table

    def cells(v):
        return dict(zip((str(c) for c in turn_table(v).columns[0]._cells),
                        (str(c) for c in turn_table(v).columns[1]._cells)))

    s = Stats(generated_tokens=11, target_passes=10, drafted=11, accepted=1, draft_translated=True)
    assert cells(StatsView.of(s))["draft model"] == "translated"
    assert "draft model" not in cells(view())


def test_summary_line_holds_the_main_figures():
    line = summary_line(view(speedup=1.5, generated=270))
    for part in ("270 tok", "12.5 tok/s", "1.50 tok/pass", "20% accepted", "est. 1.50x", "^t panel"):
        assert part in line
    assert "slower" in summary_line(view())
    assert "no generation yet" in summary_line(None)


def test_help_defines_every_figure_on_the_panel():
    from localspec.tui.screens.help import FIGURES, KEYS, help_markdown
    from localspec.tui.widgets.stats_panel import totals_table, turn_table

    defined = {name for name, _ in FIGURES}
    labels = set()
    for table in (turn_table(view()), turn_table(replace(view(), draft_translated=True)), totals_table(SessionView())):
        labels |= {str(c) for c in table.columns[0]._cells}
    labels -= {"finished", "turns"}  # words, not numbers
    assert labels <= defined | {"tokens"}, labels - defined
    assert {"est. speedup", "tokens / pass", "passes", "acceptance", "tokens / s"} <= defined
    keys = {k for k, _ in KEYS}
    for key in ("Enter", "Ctrl+J", "F1", "F2", "F3", "Ctrl+Q", "Ctrl+T", "Esc, Ctrl+C"):
        assert key in keys
    text = help_markdown()
    assert "config.toml" in text and "Where files go" in text and "approval" in text


@pytest.mark.parametrize("drafters", [(), ("ngram",)])
def test_passes_counted_by_a_real_engine(smollm2, drafters):
    """A reply that ends by itself: the last pass, which only finds the end, is not a pass; target-only decoding is
    exactly 1.00 tokens per pass, speculation never below 1 (SmolLM2-135M on llama.cpp)."""
    from localspec.prompting.prompt import chat_prompt_tokens
    from localspec.runtime.context import ContextSettings
    from localspec.runtime.pair import load_pair
    from localspec.speculative.builder import build_engine
    from localspec.speculative.decoder import GenParams
    from localspec.speculative.drafting import DraftingConfig

    pair = load_pair(smollm2, ctx=ContextSettings(n_ctx=1024))
    try:
        engine = build_engine(pair, DraftingConfig(drafters=tuple(d for d in drafters if d != "model")))
        prompt = chat_prompt_tokens(pair.target, [{"role": "user", "content": "Repeat after me: one two three four"}])
        got = engine.generate(prompt, GenParams(max_tokens=200))
    finally:
        pair.close()
    s = got.stats
    assert s.finish_reason == "stop" and s.generated_tokens > 3
    assert s.mean_accepted_length >= 1.0
    if not drafters:
        assert s.target_passes == s.generated_tokens and s.mean_accepted_length == 1.0
        # target-only decoding against itself: 1.00x, up to the noise of timing single passes on a busy machine
        assert 0.5 < s.estimated_speedup <= 1.0
    assert s.estimated_speedup <= s.mean_accepted_length


def test_each_head_has_its_own_row_and_a_build_without_heads_says_so():
    """Per-head statistics on the panel: the head's drafted and accepted tokens under its own name (MTP, EAGLE-3,
    DFlash), and where the build lacks the staging symbols, the reason in plain words."""
    from localspec.speculative.stats import DrafterStats
    from localspec.tui.widgets.stats_panel import drafter_table, switched_off_text

    lacks = "this llama.cpp build cannot run mtp heads: it lacks llama_set_nextn_layer_offset"
    s = Stats(generated_tokens=30, target_passes=12, drafted=24, accepted=18, switched_off={"head": lacks})
    s.drafters["eagle3"] = DrafterStats(20, 16)
    s.drafters["ngram"] = DrafterStats(4, 2)
    v = StatsView.of(s)
    rows = [[str(c) for c in col._cells] for col in drafter_table(v).columns]
    assert ["EAGLE-3 head", "20", "16"] in [list(r) for r in zip(*rows)]
    assert switched_off_text(v) == f"head off: {lacks}"
    d = s.to_dict()["drafters"]["eagle3"]
    assert d == {"drafted": 20, "accepted": 16, "acceptance_rate": 0.8}
