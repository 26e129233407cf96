"""A repeated request drafts from what the first one generated, in the same engine (serve answering it twice, a
regenerated reply) and in a new one built over the same conversation store (`run --tools --continue`, the app after a restart);
the output stays exactly that of target-only decoding (F16 target)."""

from __future__ import annotations

from localspec.agent.drafting_memory import StoredGenerations, call_history
from localspec.conversations import ConversationStore
from localspec.prompting.prompt import chat_prompt_tokens
from localspec.runtime.context import ContextSettings
from localspec.runtime.pair import load_pair
from localspec.speculative.builder import build_engine
from localspec.speculative.decoder import GenParams
from localspec.speculative.profile import FORMAT, CostProfile
from localspec.speculative.drafting import TARGET_ONLY, DraftingConfig

DEFAULT = DraftingConfig(drafters=("model", "schema", "history", "ngram"))  # config.toml's defaults


def _quiet_costs() -> CostProfile:
    """SmolLM2 F16's passes on this CPU, quiet (CostModel.calibrate, 2 threads): a step 7.4 ms, a pass of 2 rows
    11.2 ms, of 32 rows 31.9 ms. Fixed prices (a profile), since on a CPU shared with other jobs the measured curve
    swings, and with it where drafts are cut."""
    curve = {"1": 0.00738, "2": 0.01115, "4": 0.01166, "8": 0.01766, "16": 0.01946, "32": 0.03189}
    return CostProfile({"format": FORMAT, "target": {"step_s": 0.00738, "pass_s": curve}, "draft": None},
                       name="SmolLM2 F16, quiet")


def test_a_repeated_request_drafts_the_earlier_reply_here_and_after_a_restart(smollm2_f16, tmp_path):
    pair = load_pair(smollm2_f16, ctx=ContextSettings(n_ctx=2048))
    prompt = chat_prompt_tokens(pair.target, [{"role": "user", "content": "Write a short poem about the sea."}])
    params = GenParams(max_tokens=96)
    ref = build_engine(pair, TARGET_ONLY).generate(prompt, params)
    store = ConversationStore(tmp_path / "conversations.sqlite3")  # the record of a recorded conversation
    cid = store.create()
    kept = StoredGenerations(store, lambda: cid)
    engine = build_engine(pair, DEFAULT, history=call_history(store, lambda: cid), generations=kept,
                          costs=_quiet_costs())
    first = engine.generate(prompt, params)
    again = engine.generate(prompt, params)
    assert first.text == again.text == ref.text and len(ref.tokens) == 96
    assert first.stats.mean_accepted_length < 4  # a poem does not repeat itself much
    assert again.stats.mean_accepted_length >= 12  # 96 tokens in a handful of passes
    assert again.stats.drafters["history"].accepted >= 80  # recall reports under the history switch
    assert len(store.recent_generations()) == 2
    # A new process: another engine over the same store drafts the reply from its first token.
    restarted = build_engine(pair, DEFAULT, history=call_history(store), generations=StoredGenerations(store, lambda: cid),
                             costs=_quiet_costs())
    third = restarted.generate(prompt, params)
    assert third.text == ref.text and third.stats.mean_accepted_length >= 12
    store.close()
