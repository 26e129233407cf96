"""Assemble a SpecEngine from a loaded pair and the drafting options a user picked."""

from __future__ import annotations

from typing import Iterable

from localspec.errors import ConfigError
from localspec.runtime.pair import LoadedPair
from localspec.speculative.costs import CostModel
from localspec.speculative.drafters.copy import CopyDrafter
from localspec.speculative.drafters.history import CallHistory, HistoryDrafter
from localspec.speculative.drafters.hybrid import HybridDrafter
from localspec.speculative.drafters.memory import SpanMemory
from localspec.speculative.drafters.model import ModelDrafter
from localspec.speculative.drafters.ngram import NgramDrafter
from localspec.speculative.drafters.spans import SpanDrafter
from localspec.speculative.drafters.textlookup import TextLookupDrafter
from localspec.speculative.drafters.toolnames import ToolNameDrafter
from localspec.speculative.engine import SpecEngine
from localspec.speculative.registry import NAMES


def build_engine(pair: LoadedPair, *, use_draft_model: bool = True, draft_max: int = 8,
                 draft_p_min: float = 0.75, drafters: Iterable[str] | None = None,
                 history: CallHistory | None = None, max_draft: int = 64,
                 costs: CostModel | None = None, memory: SpanMemory | None = None) -> SpecEngine:
    """`drafters=None` means the draft model alone (issue-2 behaviour); otherwise any of registry.NAMES, combined
    by the hybrid policy. The draft model is used only if the pair has one and `use_draft_model` is set. Engines
    on the same target context may share `costs` (what a pass costs is the machine's, not a config's).
    The copy drafter's `memory` (text of earlier requests and sessions) belongs to the engine built here, so it
    lasts as long as the engine does (every request `serve` answers); without one, a new memory is seeded from
    `history`'s persisted calls (earlier sessions)."""
    names = set(drafters) if drafters is not None else {"model"}
    unknown = names - set(NAMES)
    if unknown:
        raise ConfigError(f"unknown drafter(s): {', '.join(sorted(unknown))}; choose from {', '.join(NAMES)}")
    model = None
    if "model" in names and use_draft_model and pair.draft_ctx is not None:
        model = ModelDrafter(pair.draft_ctx, max_len=draft_max, p_min=draft_p_min)
    costs = costs or CostModel()
    if names <= {"model"}:
        return SpecEngine(pair.target_ctx, model, cost_model=costs)
    tokenize = lambda text: pair.target.tokenize(text, add_special=False)  # noqa: E731
    plain = lambda text: pair.target.tokenize(text, add_special=False, parse_special=False)  # noqa: E731
    copy = None
    if "ngram" in names:
        seed = memory is None
        copy = CopyDrafter(pair.target.token_bytes, plain, max_len=max_draft, memory=memory or SpanMemory())
        for text in (history.calls if seed and history is not None else ()):
            copy.add_call_tokens((), text)
    hybrid = HybridDrafter(
        costs=costs, schema="schema" in names, model=model, max_len=max_draft, tokenize=tokenize,
        # On a CPU, decoding streams every weight once per step: file sizes give a first cost ratio.
        model_cost_ratio=(pair.draft.path.stat().st_size / pair.target.path.stat().st_size) if model else 0.0,
        # ... and the draft's own step, timed at load, replaces that guess (its price on this machine).
        model_token_s=pair.draft_token_s if model else 0.0,
        history=HistoryDrafter(tokenize, history) if "history" in names else None,
        ngram=NgramDrafter() if "ngram" in names else None,
        # Prompt lookup runs on tokens and on text: values copied from prose are tokenised differently in JSON,
        # and where a value starts, spans of the request are proposed.
        text=TextLookupDrafter(pair.target.token_bytes, plain) if "ngram" in names else None,
        spans=SpanDrafter(pair.target.token_bytes, plain) if "ngram" in names else None,
        # Copies across JSON escaping (a file's text into edit_file/write_file strings), many lines per draft.
        copy=copy,
        # Which tool a call names, from the request's words (the schema's tools, so part of schema drafting).
        tools=ToolNameDrafter(pair.target.token_bytes, plain) if "schema" in names else None)
    return SpecEngine(pair.target_ctx, hybrid, cost_model=costs)
