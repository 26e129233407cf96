"""Load a target and an optional draft, each with its own settings, checking that they can be paired."""

from __future__ import annotations

import time
from dataclasses import dataclass

from localspec.runtime.compat import check_models_compat
from localspec.runtime.context import Context, ContextSettings
from localspec.runtime.model import Model, ModelSettings


@dataclass
class LoadedPair:
    target: Model
    target_ctx: Context
    draft: Model | None = None
    draft_ctx: Context | None = None
    draft_token_s: float = 0.0  # one single-token decode of the draft model, timed at load (warm_up)

    def close(self) -> None:
        for obj in (self.draft_ctx, self.draft, self.target_ctx, self.target):
            if obj is not None:
                obj.close()


def load_pair(target_path, draft_path=None, *, target: ModelSettings = ModelSettings(),
              draft: ModelSettings = ModelSettings(), ctx: ContextSettings = ContextSettings(),
              draft_ctx: ContextSettings | None = None) -> LoadedPair:
    tmodel = Model(target_path, target)
    if draft_path is None:
        return LoadedPair(tmodel, Context(tmodel, ctx))
    dmodel = Model(draft_path, draft)
    try:
        check_models_compat(tmodel, dmodel)  # before any context exists: a clear error, not a crash mid-decode
    except Exception:
        dmodel.close()
        tmodel.close()
        raise
    dctx = Context(dmodel, draft_ctx or ctx)
    return LoadedPair(tmodel, Context(tmodel, ctx), dmodel, dctx, warm_up(dctx))


def warm_up(ctx: Context) -> float:
    """Throwaway decodes, as llama.cpp's own tools do at load: the first decode of a context pages its weights in
    and sets up its buffers; the second is timed. Returns what one single-token decode costs, so that the drafting
    policy knows a draft model's price before trying it mid-generation (on this CPU SmolLM2's Q4_1 copy costs as
    much as its F16 target, which the file sizes do not tell, and one try costs a catch-up of the whole context)."""
    tok = ctx.model.bos if ctx.model.bos >= 0 else 0
    ctx.decode([tok])
    t0 = time.perf_counter()
    ctx.decode([tok])
    spent = time.perf_counter() - t0
    ctx.clear()
    return spent
