"""Assemble a SpecEngine from a loaded pair and a DraftingConfig."""

from __future__ import annotations

from localspec.runtime.pair import LoadedPair
from localspec.speculative.costs import CostModel, PassPrices
from localspec.speculative.decoder import SpecEngine
from localspec.speculative.drafting import DraftingConfig
from localspec.speculative.heads.build import head_drafter
from localspec.speculative.indexes.memory import SpanMemory
from localspec.speculative.policy.hybrid import HybridDrafter
from localspec.speculative.sources.copy import remember_call
from localspec.speculative.sources.draft_model import ModelDrafter
from localspec.speculative.sources.past_calls import CallHistory
from localspec.speculative.sources.recall import GenerationLog, GenerationMemory, vocabulary_id
from localspec.speculative.sources.table import DraftKit, SourceKit, build_model_source, build_sources


def build_engine(pair: LoadedPair, drafting: DraftingConfig = DraftingConfig(), *,
                 history: CallHistory | None = None, costs: PassPrices | None = None,
                 memory: SpanMemory | None = None, generations: GenerationLog | None = None) -> SpecEngine:
    """The engine for `drafting`: the draft model alone when it is the only drafter (plain draft-model
    speculation), else the hybrid policy over the chosen sources (speculative/sources/table.py). The draft model is used
    only if the pair has one. Engines on the same target context may share `costs` (what a pass costs is the
    machine's, not a config's). The copy drafter's `memory` (text of earlier requests and sessions) belongs to the
    engine built here, so it lasts as long as the engine does (every request `serve` answers); without one, a new
    memory is seeded from `history`'s persisted calls (earlier sessions). What the engine generates is remembered
    too (sources/recall.py), and kept in `generations` for the next process where the front end keeps them (the
    conversation store: agent/drafting_memory.py)."""
    names = set(drafting.drafters)
    model = None
    # A draft of another family drafts through text: a source of its own (sources/translated.py), built below.
    translated = drafting.uses_model and pair.draft_ctx is not None and pair.translation is not None
    if drafting.uses_model and pair.draft_ctx is not None and not translated:
        model = ModelDrafter(pair.draft_ctx, max_len=drafting.draft_max, p_min=drafting.draft_p_min)
        model = ModelDrafter(pair.draft_ctx, max_len=drafting.draft_max, p_min=drafting.draft_p_min,
                             timings=pair.draft_timings)
    costs = costs or CostModel()
    dctx = pair.draft_ctx if drafting.uses_model else None  # its decodes are recorded in the stats
    # The target's head (MTP layers, an EAGLE-3 or DFlash file): drafts as long as the draft model would, and
    # stops where its top token's share falls under the same p_min, as llama.cpp's heads do.
    heads = [(head_drafter(pair.head, max_len=drafting.draft_max, p_min=drafting.draft_p_min), pair.head.step_s)
             ] if drafting.uses_heads and pair.head is not None else []
    if names <= {"model"} and not translated:
        return SpecEngine(pair.target_ctx, model, cost_model=costs, draft_ctx=dctx)
    if memory is None:
        memory = SpanMemory()
        for text in (history.calls if history is not None else ()):
            remember_call(memory, text)
    target = pair.target
    tokenize = lambda text: target.tokenize(text, add_special=False)  # noqa: E731
    log = generations  # None: remembered for the engine's own life only
    kit = SourceKit(token_bytes=target.token_bytes, tokenize=tokenize,
                    plain=lambda text: target.tokenize(text, add_special=False, parse_special=False),
                    history=history, memory=memory, max_draft=drafting.max_draft,
                    generations=GenerationMemory(target.token_bytes, tokenize, log,
                                                 vocabulary_id(target.n_vocab, target.token_bytes) if log else ""),
                    draft=DraftKit(pair.draft_ctx, target, drafting.draft_max, drafting.draft_p_min, pair.draft_timings)
                    if translated and pair.draft_ctx is not None else None)
    if translated:
        model = build_model_source(kit, names)
        if names <= {"model"}:
            return SpecEngine(pair.target_ctx, model, cost_model=costs, draft_ctx=dctx, translated=True)
    hybrid = HybridDrafter(
        costs=costs, sources=build_sources(kit, names), schema="schema" in names, model=model,
        max_len=drafting.max_draft, tokenize=kit.tokenize,
        # On a CPU, decoding streams every weight once per step: file sizes give a first cost ratio ...
        model_cost_ratio=(pair.draft.path.stat().st_size / target.path.stat().st_size
                          if model is not None and pair.draft is not None else 0.0),
        # ... and the draft's own step, timed at load, replaces that guess (its price on this machine).
        model_token_s=pair.draft_token_s if model is not None else 0.0, heads=heads)
    if drafting.uses_heads and pair.head_note:
        hybrid.rest("head", pair.head_note)  # stats, the panel and --json say why the MTP layers rest
    return SpecEngine(pair.target_ctx, hybrid, cost_model=costs, draft_ctx=dctx, translated=translated,
                      head_ctx=pair.head.ctx if heads and pair.head is not None else None)
