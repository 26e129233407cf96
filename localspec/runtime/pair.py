"""Load a target and an optional draft, each with its own settings, checking that they can be paired."""

from __future__ import annotations

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
    return LoadedPair(tmodel, Context(tmodel, ctx), dmodel, Context(dmodel, draft_ctx or ctx))
