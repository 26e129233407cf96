"""A draft model of another vocabulary (sources/translated.py): the pair loads, its drafts come through text, and
the output is the target's own: token for token at greedy, the target's distribution when sampling. The tiny
models (vocabularies "a" and "b") run in the fast tier; the real pair (Gemma-3-270M F16 drafted by SmolLM2-135M,
and the reverse) in the slow one."""

from __future__ import annotations

from collections import Counter

import pytest

from localspec.runtime.context import ContextSettings
from localspec.runtime.pair import load_pair
from localspec.speculative.builder import build_engine
from localspec.speculative.decoder import GenParams
from localspec.speculative.draft import Draft
from localspec.speculative.drafting import TARGET_ONLY, DraftingConfig
from localspec.speculative.policy.hybrid import HybridDrafter
from localspec.speculative.sampling import SamplingParams
from localspec.speculative.sources.translated import TranslatedDrafter

GREEDY = SamplingParams(temperature=0.0)
ALL = DraftingConfig(drafters=("model", "schema", "history", "ngram"), draft_p_min=0.0)
MODEL = DraftingConfig(drafters=("model",), draft_p_min=0.0)


@pytest.fixture
def tiny_translated(tiny_target, tiny_other_vocab):
    pair = load_pair(tiny_target, tiny_other_vocab, ctx=ContextSettings(n_ctx=512, n_batch=64, n_threads=1))
    yield pair
    pair.close()


def chat(model, text: str) -> list[int]:
    return model.tokenize(f"<|im_start|>user\n{text}<|im_end|>\n<|im_start|>assistant\n", add_special=True)


def run(pair, drafting, prompt, params):
    pair.target_ctx.clear()
    if pair.draft_ctx is not None:
        pair.draft_ctx.clear()
    return build_engine(pair, drafting).generate(prompt, params)


def drafts_of(engine) -> list[Draft]:
    """Record what the engine's translated drafter proposes."""
    drafter = engine.drafter.model if isinstance(engine.drafter, HybridDrafter) else engine.drafter
    assert isinstance(drafter, TranslatedDrafter)
    seen: list[Draft] = []
    propose = drafter.propose
    drafter.propose = lambda req: seen.append(propose(req)) or seen[-1]  # type: ignore[method-assign]
    return seen


def test_a_draft_of_another_vocabulary_loads_and_says_why(tiny_translated):
    assert tiny_translated.translation and "differ" in tiny_translated.translation
    engine = build_engine(tiny_translated, MODEL)
    assert isinstance(engine.drafter, TranslatedDrafter) and engine.translated
    hybrid = build_engine(tiny_translated, ALL)
    assert isinstance(hybrid.drafter, HybridDrafter) and isinstance(hybrid.drafter.model, TranslatedDrafter)
    # Without the model drafter the draft is not used at all.
    assert not build_engine(tiny_translated, DraftingConfig(drafters=("ngram",))).translated


@pytest.mark.parametrize("drafting", [MODEL, ALL], ids=["model", "hybrid"])
def test_greedy_output_is_the_targets_own(tiny_translated, drafting):
    pair = tiny_translated
    prompt = chat(pair.target, "read the file name path and list the data")
    params = GenParams(max_tokens=48, sampling=GREEDY)
    base = run(pair, TARGET_ONLY, prompt, params)
    engine = build_engine(pair, drafting)
    seen = drafts_of(engine)
    pair.target_ctx.clear()
    got = engine.generate(prompt, params)
    assert got.tokens == base.tokens
    assert got.stats.draft_translated and got.stats.to_dict()["draft_translated"] is True
    assert "draft model translated" in got.stats.summary()
    drafted = [d for d in seen if d.tokens]
    if drafting is MODEL:  # (the hybrid prices a draft as costly as its target out on this machine)
        assert drafted and got.stats.drafters["model"].drafted > 0
    # A translated draft has no distribution over the target's tokens: each token is a point-mass proposal.
    assert all(q is None for d in drafted for q in d.q) and all(o == "model" for d in drafted for o in d.origins)


def test_sampling_keeps_the_targets_distribution(tiny_translated):
    """Deterministic proposals verified by speculative sampling: what comes out is distributed as the target alone
    samples it. The first four tokens over 300 seeds, with and without the translated draft."""
    pair = tiny_translated
    prompt = chat(pair.target, "the file")
    seen: dict[str, Counter] = {}
    engines = {"target": build_engine(pair, TARGET_ONLY), "translated": build_engine(pair, MODEL)}
    drafted = 0
    for name, engine in engines.items():
        counts: Counter = Counter()
        for seed in range(300):
            pair.target_ctx.clear()
            g = engine.generate(prompt, GenParams(max_tokens=4, sampling=SamplingParams(temperature=1.5, seed=seed)))
            counts[tuple(g.tokens[2:4])] += 1
            drafted += g.stats.drafted if name == "translated" else 0
        seen[name] = counts
    assert drafted > 100  # the later tokens went through verification of translated drafts
    keys = set(seen["target"]) | set(seen["translated"])
    tv = sum(abs(seen["target"][k] - seen["translated"][k]) for k in keys) / 2 / 300
    # Two samples of 300 from the target alone differ by 0.08 in total variation (9 outcomes); a verifier that
    # kept every draft gives 1.0.
    assert tv < 0.2, tv


@pytest.mark.parametrize("target, draft", [("gemma_f16", "smollm2"), ("smollm2_f16", "gemma_q2k")])
def test_real_pairs_of_two_families_are_exact(request, target, draft):
    """Gemma-3-270M F16 drafted by SmolLM2-135M Q4_1, and the reverse: identical to target-only at greedy, on
    prose and on a tool call under its grammar (the hybrid: the schema's tokens, then the translated draft)."""
    from localspec.prompting.prompt import chat_prompt_tokens
    from localspec.prompting.template_file import apply_chat_template

    pair = load_pair(request.getfixturevalue(target), request.getfixturevalue(draft),
                     ctx=ContextSettings(n_ctx=2048, n_threads=2))
    try:
        assert pair.translation is not None
        apply_chat_template(pair.target, None)
        prompt = chat_prompt_tokens(pair.target, [{"role": "user", "content": "Explain how a hash map works."}])
        params = GenParams(max_tokens=64, sampling=GREEDY)
        base = run(pair, TARGET_ONLY, prompt, params)
        for drafting in (MODEL, ALL):
            got = run(pair, drafting, prompt, params)
            assert got.tokens == base.tokens and got.stats.draft_translated
            if drafting is MODEL:  # (the hybrid may price the model out, or its other sources guess first)
                assert got.stats.drafters["model"].accepted > 0
    finally:
        pair.close()
