"""Draft heads are exact: greedy output with an MTP, EAGLE-3 or DFlash head drafting is the target's own, token for
token, across draft lengths, partial acceptance, prompts longer than a batch, rollback on a hybrid (DeltaNet)
target and with the other drafting sources mixed in; sampled output keeps the target's distribution.

Real llama.cpp throughout, on tiny random-weight GGUFs (runtime/tinyheads.py, tests/head_helpers.py), all F32 (a
quantized target's batched rows differ from its single rows, so exactness is judged on F32 and F16). The hybrid prices
passes with a GPU-like cost profile, so that the heads draft (on the tiny models a head costs what its target does).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

from localspec.runtime.context import ContextSettings
from localspec.runtime.llama import lib
from localspec.runtime.pair import load_pair
from localspec.speculative import names as registry
from localspec.speculative.builder import build_engine
from localspec.speculative.decoder import GenParams, SpecEngine
from localspec.speculative.drafting import TARGET_ONLY, DraftingConfig
from localspec.speculative.sampling import SamplingParams, filtered_dist
from tests.head_helpers import head_profile

PROMPT = ("read the file name and write the test data to the file, then list the directory and print the result "
          "of the last command")
N = 48


class Recording(SpecEngine):
    """The engine, noting each verified step's (drafted, accepted): what the statistics sum up."""

    steps: list[tuple[int, int, tuple[str, ...]]]
    drafts: list[list[int]]

    def _record(self, draft, accepted, stats):
        self.steps.append((len(draft), accepted, tuple(draft.origins)))
        self.drafts.append(list(draft.tokens))
        super()._record(draft, accepted, stats)


def _baseline(target, prompt=PROMPT, n=N, n_batch=16):
    """(the prompt's tokens, what the target alone generates after them); `prompt` is text or tokens."""
    pair = load_pair(target, ctx=ContextSettings(n_ctx=1024, n_batch=n_batch, n_threads=1))
    try:
        engine = build_engine(pair, TARGET_ONLY)
        tokens = pair.target.tokenize(prompt) if isinstance(prompt, str) else list(prompt)
        return tokens, engine.generate(tokens, GenParams(max_tokens=n)).tokens
    finally:
        pair.close()


def _spec(target, head, *, drafters=("head",), draft_max=3, n_batch=16):
    pair = load_pair(target, head, ctx=ContextSettings(n_ctx=1024, n_batch=n_batch, n_threads=1), heads=True)
    engine = build_engine(pair, DraftingConfig(drafters=drafters, draft_max=draft_max, draft_p_min=0.0),
                          costs=head_profile())
    engine.__class__ = Recording
    engine.steps, engine.drafts = [], []
    engine._calibrate = False  # the profile prices the passes; this machine's timings are not needed
    return pair, engine


CASES = {  # name: (target, head file or None for the target's own MTP layers)
    "mtp": ("qwen35", None),
    "mtp-chained": ("step35", None),
    "mtp-file": ("qwen35_plain", "mtp_only"),
    "eagle3": ("llama", "eagle3"),
    "dflash": ("llama", "dflash"),
    "dspark": ("llama", "dspark"),
    "eagle3-hybrid-target": ("qwen35", "eagle3_q35"),
    "dflash-hybrid-target": ("qwen35", "dflash_q35"),
}
KINDS = {"mtp": "mtp", "mtp-chained": "mtp", "mtp-file": "mtp", "eagle3": "eagle3", "dflash": "dflash",
         "dspark": "dspark", "eagle3-hybrid-target": "eagle3", "dflash-hybrid-target": "dflash"}


def _paths(head_files, case):
    target, head = CASES[case]
    return getattr(head_files, target), getattr(head_files, head) if head else None


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("draft_max", [1, 4])
def test_greedy_output_is_the_targets_own(head_files, case, draft_max):
    target, head = _paths(head_files, case)
    prompt, want = _baseline(target)
    assert len(prompt) > 16  # longer than a batch: the head catches up on the prompt in several decodes
    pair, engine = _spec(target, head, draft_max=draft_max)
    try:
        assert pair.head is not None and pair.head.kind == KINDS[case]
        got = engine.generate(prompt, GenParams(max_tokens=N))
        assert got.tokens == want
        origin = pair.head.origin
        assert got.stats.drafters[origin].drafted > 0  # the head drafted ...
        # ... never more than it was allowed: draft_max, one token per NextN block for chained heads (2 in the tiny
        # step35), a block less its anchor for DFlash (3 in the tiny drafter)
        cap = {"mtp-chained": 2, "dflash": 3, "dflash-hybrid-target": 3, "dspark": 4}.get(case, draft_max)
        assert max(d for d, _, _ in engine.steps) == min(draft_max, cap)
        assert set(got.origins) <= {"target", origin}
    finally:
        pair.close()


@pytest.mark.parametrize("case", ["mtp", "mtp-chained", "eagle3", "eagle3-hybrid-target"])
def test_drafts_are_accepted_in_part(head_files, case):
    """The MTP block and the EAGLE-3 head follow the target's cycle (runtime/tinyheads.py), so some drafts are
    accepted whole, some in part, some not at all; each of those paths keeps the output exact."""
    target, head = _paths(head_files, case)
    prompt, want = _baseline(target, n=96)
    pair, engine = _spec(target, head, draft_max=4)
    try:
        got = engine.generate(prompt, GenParams(max_tokens=96))
        assert got.tokens == want
        outcomes = {"all" if a == d else "part" if a else "none" for d, a, _ in engine.steps if d}
        assert outcomes == {"all", "part", "none"}, engine.steps
        assert got.stats.mean_accepted_length > 1.3
    finally:
        pair.close()


@pytest.mark.parametrize("case", list(CASES))
def test_mixed_with_every_other_source_and_a_second_turn(head_files, case):
    """All drafters on (schema, history, n-gram, head); a second generation continues the first (the target rolls
    back to the common prefix, the head with it), then a third starts over on another prompt."""
    target, head = _paths(head_files, case)
    prompt, want = _baseline(target)
    pair, engine = _spec(target, head, drafters=registry.NAMES, draft_max=4)
    try:
        first = engine.generate(prompt, GenParams(max_tokens=N))
        assert first.tokens == want
        more = prompt + first.tokens + pair.target.tokenize(" and the file name again", add_special=False)
        _, want2 = _baseline(target, more, n=32)
        assert engine.generate(more, GenParams(max_tokens=32)).tokens == want2
        other, want3 = _baseline(target, "hello world", n=32)
        assert engine.generate(other, GenParams(max_tokens=32)).tokens == want3
        assert engine.totals.drafters[pair.head.origin].drafted > 0
    finally:
        pair.close()


def test_a_hybrid_target_rolls_back_rejected_drafts_without_a_new_prefill(head_files):
    """Qwen3.5's DeltaNet layers keep a recurrent state that seq_rm cannot cut, unless the context keeps snapshots
    (n_rs_seq, llama.cpp's rollback for hybrid targets): drafts are then capped at what it rolls back, and a
    rejected draft costs no prefill of the context again (which is what truncate falls back to otherwise)."""
    pair, engine = _spec(head_files.qwen35, None, draft_max=8)
    try:
        ctx = pair.target_ctx
        # 16 snapshots by default, fewer where the ubatch (16 here) could not keep them with the token before.
        assert lib.llama_n_rs_seq(ctx.ptr) == ctx.max_draft == 14
        prompt, want = _baseline(head_files.qwen35)
        got = engine.generate(prompt, GenParams(max_tokens=N))
        assert got.tokens == want
        assert any(0 <= a < d for d, a, _ in engine.steps)  # rejections happened, and were rolled back
        # Every token the target decoded: the prompt, then each pass's [last] + draft, and nothing again.
        decoded = sum(n * count for (n, _), count in ctx.shapes.items())
        assert decoded == len(prompt) + sum(d + 1 for d, _, _ in engine.steps)
    finally:
        pair.close()


@pytest.mark.slow  # thousands of verified tokens
@pytest.mark.parametrize("case", ["mtp", "eagle3"])
def test_sampling_keeps_the_targets_distribution(head_files, case):
    """A head proposes its argmax d (a point mass): kept with the target's probability p(d), else the target samples
    from the rest (speculative/verify.py), so what comes out follows the target's law. Two checks over many seeds,
    each against the target's exact law (target-only decodes), on the first two tokens (the second is where the
    head's first draft is judged):
    - the joint law of both tokens, where it is peaked (temperature 1.5): total variation distance;
    - where it is flat (temperature 4), how often the second token is the head's draft: p(d) on average over the
      runs, within 4 standard deviations (a verifier that kept drafts twice as often, or resampled d after
      rejecting it, lands tens of deviations away)."""
    target, head = _paths(head_files, case)
    base_pair = load_pair(target, ctx=ContextSettings(n_ctx=256, n_batch=16, n_threads=1))
    pair, spec = _spec(target, head, draft_max=3)
    prompt = pair.target.tokenize("the file")
    ctx = base_pair.target_ctx

    def law(tokens, params):
        ctx.prefill(tokens)
        d = filtered_dist(ctx.logits(-1).copy(), params)
        return {int(t): float(p) for t, p in zip(d.ids, d.probs)}

    def runs(params, n):
        for seed in range(n):
            spec.drafts.clear()
            out = spec.generate(prompt, GenParams(max_tokens=3, sampling=replace(params, seed=seed))).tokens
            # max_tokens 3: room to draft after the first token; the draft judged at the second is drafts[0].
            yield out[0], out[1], spec.drafts[0][0] if spec.drafts and spec.drafts[0] else None

    try:
        peaked = SamplingParams(temperature=1.5, top_k=0, top_p=1.0, min_p=0.0)
        n = 1000
        got = Counter((a, b) for a, b, _ in runs(peaked, n))
        first = law(prompt, peaked)
        exact = {(a, b): pa * pb for a, pa in first.items() if pa > 1e-3 for b, pb in law(prompt + [a], peaked).items()}
        tv = 0.5 * sum(abs(got[k] / n - exact.get(k, 0.0)) for k in set(got) | set(exact))
        assert tv < 0.06, f"TV distance {tv:.3f} from the target's law"

        flat = replace(peaked, temperature=4.0)
        hits = mean = var = 0.0
        for a, b, d in runs(flat, n):
            assert d is not None  # the head drafted at the second token
            p = law(prompt + [a], flat).get(d, 0.0)
            hits, mean, var = hits + (b == d), mean + p, var + p * (1 - p)
        z = (hits - mean) / var ** 0.5
        assert abs(z) < 4, f"the head's draft came out {hits:.0f} times, the target's law says {mean:.1f} (z {z:.1f})"
        s = spec.totals.drafters[pair.head.origin]
        assert 0 < s.accepted < s.drafted  # drafts were judged both ways
    finally:
        pair.close()
        base_pair.close()
