"""The speculative loop on real llama.cpp: exactness, rollback consistency, sampling, stops and statistics."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from localspec.runtime.context import Context, ContextSettings
from localspec.runtime.pair import load_pair
from localspec.speculative.decoder import GenParams, SpecEngine
from localspec.speculative.sampling import SamplingParams
from localspec.speculative.sources.draft_model import ModelDrafter
from localspec.speculative.verify import DEVICE_CANDIDATES

PROMPTS = [
    "The file name is",
    "Write a short story about a dragon who",
    'Call the tool: {"name": "read_file", "arguments": {"path": "',
    "List three colours and explain why",
    "def fibonacci(n):\n",
]


def _engines(target, draft, *, n_ctx=2048, draft_max=8, p_min=0.0, picks="off"):
    """Target-only and speculative engines on one target context; with picks="on" that context picks each row's
    best tokens on the device (runtime/picks.py), and the target-only reference runs on a second context reading
    whole rows."""
    pair = load_pair(target, draft, ctx=ContextSettings(n_ctx=n_ctx, device_picks=picks))
    ref_ctx = pair.target_ctx if picks == "off" else Context(pair.target, ContextSettings(n_ctx=n_ctx,
                                                                                           device_picks="off"))
    base = SpecEngine(ref_ctx, None)
    spec = SpecEngine(pair.target_ctx, ModelDrafter(pair.draft_ctx, max_len=draft_max, p_min=p_min),
                      cost_model=base.costs)
    return pair, base, spec


def _identical_greedy(target, draft, prompts, n_tokens, **kw):
    """How many prompts give the target-only output (whole rows) token for token: speculative decoding, and with
    picks="on" target-only decoding on the picking context too."""
    pair, base, spec = _engines(target, draft, **kw)
    plain = SpecEngine(pair.target_ctx, None, cost_model=base.costs) if kw.get("picks") == "on" else None
    same, drafted, accepted = 0, 0, 0
    for text in prompts:
        prompt = pair.target.tokenize(text)
        ref = base.generate(prompt, GenParams(max_tokens=n_tokens))
        got = spec.generate(prompt, GenParams(max_tokens=n_tokens))
        same += got.tokens == ref.tokens and (plain is None or
                                              plain.generate(prompt, GenParams(max_tokens=n_tokens)).tokens == ref.tokens)
        drafted += got.stats.drafted
        accepted += got.stats.accepted
    assert pair.target_ctx.picks_on_device == (DEVICE_CANDIDATES if kw.get("picks") == "on" else 0)
    assert pair.target_ctx.side_decodes == 0  # without a grammar the best tokens always tell
    return same, drafted, accepted


@pytest.mark.slow  # an exactness proof: thousands of verified tokens
@pytest.mark.parametrize("picks", ["off", "on"])
def test_greedy_exact_on_tiny_f32(tiny_pair_paths, picks):
    same, drafted, accepted = _identical_greedy(*tiny_pair_paths, PROMPTS, 96, picks=picks)
    assert same == len(PROMPTS)
    assert drafted > 0 and 0 < accepted < drafted  # partial acceptance: rollbacks really happened


@pytest.mark.parametrize("picks", ["off", "on"])
def test_greedy_exact_smollm2_f16_with_q4_draft(smollm2_f16, smollm2, picks):
    same, drafted, accepted = _identical_greedy(smollm2_f16, smollm2, PROMPTS[:3], 48, picks=picks)
    assert same == 3
    assert accepted > 0


@pytest.mark.parametrize("picks", ["off", "on"])
def test_greedy_exact_gemma_f16_with_q2k_draft(gemma_f16, gemma_q2k, picks):
    same, drafted, accepted = _identical_greedy(gemma_f16, gemma_q2k, PROMPTS[:3], 48, p_min=0.0, picks=picks)
    assert same == 3
    assert 0 < accepted < drafted


def test_sampling_reads_whole_rows_on_a_picking_context(tiny_pair_paths):
    """Speculative sampling needs the target's exact distribution: on a context that picks greedy rows on the
    device, a sampled generation reads whole rows and draws exactly what it draws on a context that never picks."""
    params = GenParams(max_tokens=48, sampling=SamplingParams(temperature=0.9, seed=7))
    outs = {}
    for picks in ("off", "on"):
        pair, _, spec = _engines(*tiny_pair_paths, picks=picks)
        outs[picks] = spec.generate(pair.target.tokenize("hello world"), params).tokens
        assert pair.target_ctx.picks_on_device == 0 and pair.target_ctx.side_decodes == 0
        spec.generate(pair.target.tokenize("hello"), GenParams(max_tokens=4))  # greedy again: picks come back
        assert pair.target_ctx.picks_on_device == (DEVICE_CANDIDATES if picks == "on" else 0)
    assert outs["on"] == outs["off"]


def _record_rows(ctx: Context) -> list[tuple[int, int]]:
    """Record every logits row the engine reads from `ctx`, as (position of the token it predicts, its argmax). The
    context stays the real one: only decode() and logits() are wrapped, to learn where each batch sits."""
    rows: list[tuple[int, int]] = []
    last_batch = [0]
    decode, logits = ctx.decode, ctx.logits

    def recording_decode(tokens, flags="last"):
        decode(tokens, flags)
        last_batch[0] = len(tokens)

    def recording_logits(i=-1):
        row = logits(i)
        r = i if i >= 0 else last_batch[0] - 1
        rows.append((ctx.n_past - last_batch[0] + r + 1, int(np.argmax(row))))
        return row

    ctx.decode, ctx.logits = recording_decode, recording_logits
    return rows


def test_quantized_target_emits_verify_argmax(smollm2):
    """On a quantized target batch logits differ slightly from single-token ones, so output may drift from
    target-only decoding; what must hold is that every emitted token is the argmax of the verify row that judged it
    (rows past the first rejection are never read)."""
    pair, base, spec = _engines(smollm2, smollm2)
    same = checked = 0
    for text in PROMPTS:
        prompt = pair.target.tokenize(text)
        want = base.generate(prompt, GenParams(max_tokens=48)).tokens
        rows = _record_rows(pair.target_ctx)
        got = spec.generate(prompt, GenParams(max_tokens=48))
        del pair.target_ctx.decode, pair.target_ctx.logits  # back to the class's methods
        same += got.tokens == want
        history = prompt + got.tokens
        judged = [(pos, amax) for pos, amax in rows if pos < len(history)]
        assert judged and all(history[pos] == amax for pos, amax in judged)
        checked += len(judged)
    assert checked >= 48 * len(PROMPTS) // 2 and spec.totals.accepted > 0
    print(f"\nidentical to target-only on quantized SmolLM2 Q4_1: {same}/{len(PROMPTS)}")


@pytest.mark.slow  # an exactness proof: thousands of verified tokens
def test_long_generation_keeps_caches_consistent(tiny_pair_paths):
    """600 tokens with many rejections: both caches must hold exactly the verified history, and the KV state left
    by speculation must give the same logits as evaluating that history from scratch."""
    pair, base, spec = _engines(*tiny_pair_paths, n_ctx=1024, draft_max=6)
    prompt = pair.target.tokenize("hello world")
    got = spec.generate(prompt, GenParams(max_tokens=600))
    assert got.stats.drafted - got.stats.accepted > 20  # many rejections
    history = prompt + got.tokens
    assert pair.target_ctx.tokens == history[:-1]
    dtoks = pair.draft_ctx.tokens
    assert dtoks[: len(history) - 1] == history[: len(dtoks)][: len(history) - 1]
    # KV content check: the next-token logits from the speculative cache equal a fresh evaluation.
    pair.target_ctx.decode([history[-1]])
    spec_logits = pair.target_ctx.logits(-1).copy()
    fresh = Context(pair.target, ContextSettings(n_ctx=1024))
    fresh.prefill(history)
    # F32 weights, F16 KV cache: batch shapes change summation order, so allow rounding noise (a wrong
    # token in the cache moves logits by whole units).
    np.testing.assert_allclose(spec_logits, fresh.logits(-1), rtol=0, atol=0.05)
    # Against token-by-token decoding the output is identical except at numerical near-ties (F32 batch kernels
    # sum in another order): any divergence must sit on a top-2 margin far below the logit scale.
    ref = base.generate(prompt, GenParams(max_tokens=600)).tokens
    if ref != got.tokens:
        i = next(k for k, (a, b) in enumerate(zip(ref, got.tokens)) if a != b)
        fresh.prefill(prompt + ref[:i])
        row = fresh.logits(-1)
        assert abs(row[ref[i]] - row[got.tokens[i]]) < 0.05, f"divergence at {i} is not a near-tie"


@pytest.mark.slow  # long sampled generations
def test_sampling_is_reproducible_with_seed(tiny_pair_paths):
    pair, base, spec = _engines(*tiny_pair_paths)
    prompt = pair.target.tokenize("the file")
    params = GenParams(max_tokens=40, sampling=SamplingParams(temperature=1.0, seed=42))
    a = spec.generate(prompt, params).tokens
    b = spec.generate(prompt, params).tokens
    c = spec.generate(prompt, GenParams(max_tokens=40, sampling=SamplingParams(temperature=1.0, seed=7))).tokens
    assert a == b
    assert a != c


@pytest.mark.slow  # an exactness proof: thousands of verified tokens
def test_sampling_preserves_target_distribution(tiny_pair_paths):
    """Speculative sampling must give the target's own distribution: compare the joint law of the first tokens
    over many seeds against target-only sampling (total variation distance, both estimated the same way)."""
    pair, base, spec = _engines(*tiny_pair_paths, draft_max=4)
    prompt = pair.target.tokenize("the")
    sp = dict(temperature=1.5, top_k=0, top_p=1.0, min_p=0.0)
    n = 600
    ref, got = Counter(), Counter()
    for seed in range(n):
        ref[tuple(base.generate(prompt, GenParams(max_tokens=3, sampling=SamplingParams(seed=seed, **sp))).tokens)] += 1
        got[tuple(spec.generate(prompt, GenParams(max_tokens=3, sampling=SamplingParams(seed=10_000 + seed, **sp)))
                  .tokens)] += 1
    # Per-position marginals: TV distance small for both the first and the third token.
    for pos in (0, 2):
        r, g = Counter(), Counter()
        for k, v in ref.items():
            r[k[pos]] += v
        for k, v in got.items():
            g[k[pos]] += v
        tv = 0.5 * sum(abs(r[t] - g[t]) for t in set(r) | set(g)) / n
        assert tv < 0.12, f"position {pos}: TV distance {tv:.3f}"
    assert spec.totals.accepted > 0 and spec.totals.drafted > spec.totals.accepted


@pytest.mark.slow  # long generations
def test_stop_string_and_max_tokens(tiny_pair_paths):
    pair, base, spec = _engines(*tiny_pair_paths)
    prompt = pair.target.tokenize("the file name is")
    full = base.generate(prompt, GenParams(max_tokens=60)).text
    stop = full[10:14]
    got = spec.generate(prompt, GenParams(max_tokens=60, stop=(stop,)))
    assert got.text == full[: full.index(stop)]
    assert got.stats.finish_reason == "stop"
    short = spec.generate(prompt, GenParams(max_tokens=7))
    assert len(short.tokens) == 7 and short.stats.finish_reason == "length"


def test_origins_and_stats(tiny_pair_paths):
    pair, base, spec = _engines(*tiny_pair_paths)
    got = spec.generate(pair.target.tokenize("the file name is"), GenParams(max_tokens=64))
    s = got.stats
    assert set(got.origins) <= {"target", "model"} and "model" in got.origins
    assert s.generated_tokens == 64 == len(got.tokens)
    assert s.accepted == got.origins.count("model")
    # Each pass emits one target token, except a last pass cut short by max_tokens.
    assert got.origins.count("target") <= s.target_passes <= got.origins.count("target") + 1
    assert s.mean_accepted_length == pytest.approx(64 / s.target_passes)
    assert 0 <= s.acceptance_rate <= 1 and s.drafters["model"].drafted == s.drafted
    assert s.per_position_drafted[0] >= s.per_position_drafted[-1]
    assert s.tokens_per_second > 0 and s.estimated_speedup > 0 and s.target_token_s > 0
    d = s.to_dict()
    for key in ("generated_tokens", "target_passes", "drafted", "accepted", "acceptance_rate",
                "mean_accepted_length", "tokens_per_second", "wall_s", "estimated_speedup", "time_s"):
        assert key in d


def test_stats_record_pass_shapes_and_draft_model_decodes(tiny_pair_paths):
    """What a cost profile prices (speculative/profile.py): every verify pass by (rows, logits rows), and the draft
    model's decodes with their time."""
    from localspec.runtime.pair import load_pair
    from localspec.speculative.builder import build_engine
    from localspec.speculative.decoder import GenParams

    target, draft = tiny_pair_paths
    pair = load_pair(target, draft)
    try:
        engine = build_engine(pair)  # the draft model alone
        prompt = pair.target.tokenize("read the file name and list the directory")
        before = pair.draft_ctx.shapes.copy()  # load_pair's warm-up decodes
        stats = engine.generate(prompt, GenParams(max_tokens=40)).stats
        passes = sum(stats.pass_shapes.values())
        # Every counted pass is a verify pass, plus the prompt's (not one) and a last one that found only the end.
        assert stats.target_passes - 1 <= passes <= stats.target_passes
        assert sum(rows * n for (rows, _), n in stats.pass_shapes.items()) == passes + stats.drafted
        assert all(0 < logits <= rows for rows, logits in stats.pass_shapes)
        assert stats.draft_shapes and stats.draft_decode_s > 0
        assert stats.draft_shapes == pair.draft_ctx.shapes - before
        d = stats.to_dict()
        assert sorted(map(tuple, d["pass_shapes"])) == sorted((r, lr, n) for (r, lr), n in stats.pass_shapes.items())
        assert d["draft_model_decode_s"] > 0 and d["draft_model_shapes"]
        total = type(stats)()
        total.merge(stats)
        total.merge(stats)
        assert total.pass_shapes == stats.pass_shapes + stats.pass_shapes
        assert total.draft_decode_s == pytest.approx(2 * stats.draft_decode_s)
    finally:
        pair.close()
