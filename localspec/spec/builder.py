"""Assemble a SpecEngine from a loaded pair and the drafting options a user picked."""

from __future__ import annotations

from localspec.runtime.pair import LoadedPair
from localspec.spec.drafters.model import ModelDrafter
from localspec.spec.engine import SpecEngine


def build_engine(pair: LoadedPair, *, use_draft_model: bool = True, draft_max: int = 8,
                 draft_p_min: float = 0.75) -> SpecEngine:
    drafter = None
    if use_draft_model and pair.draft_ctx is not None:
        drafter = ModelDrafter(pair.draft_ctx, max_len=draft_max, p_min=draft_p_min)
    return SpecEngine(pair.target_ctx, drafter)
