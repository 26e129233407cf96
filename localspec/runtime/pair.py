"""Load a target and an optional draft, each with its own settings, checking that they can be paired."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Callable

from localspec.runtime.compat import vocabulary_difference
from localspec.runtime.context import Context, ContextSettings
from localspec.runtime.head_files import is_head_file
from localspec.runtime.heads import HeadError, LoadedHead, open_head, target_mtp_layers
from localspec.runtime.heads import warm_up as warm_up_head
from localspec.runtime.model import Model, ModelSettings
from localspec.runtime.timing import steady_median, steady_state


@dataclass
class LoadedPair:
    target: Model
    target_ctx: Context
    draft: Model | None = None
    draft_ctx: Context | None = None
    draft_token_s: float = 0.0  # one single-token decode of the draft model in steady state, timed at load (warm_up)
    # Why the draft's tokens are not the target's: it drafts through text (speculative/sources/translated.py).
    # None: the same vocabulary (or no draft).
    translation: str | None = None
    head: LoadedHead | None = None  # the target's draft head (runtime/heads.py): its MTP layers or a head file
    head_note: str = ""  # why the target's own MTP layers do not draft (a build without the staging symbols)
    # The draft's timed decodes at load, (tokens, logits rows, seconds): its single steps and one batch, so that its
    # price per token and per caught-up token are known before it drafts (speculative/sources/draft_model.py).
    draft_timings: tuple[tuple[int, int, float], ...] = ()

    def close(self) -> None:
        for obj in (self.head, self.draft_ctx, self.draft, self.target_ctx, self.target):
            if obj is not None:
                obj.close()


def load_pair(target_path, draft_path=None, *, target: ModelSettings = ModelSettings(),
              draft: ModelSettings = ModelSettings(), ctx: ContextSettings = ContextSettings(),
              draft_ctx: ContextSettings | None = None, heads: bool = False, head_path=None,
              mtp: bool = True) -> LoadedPair:
    """The target and the draft model `draft_path` (checked to pair with it), and with `heads` a draft head:
    `head_path`, or `draft_path` where that names a head file (EAGLE-3, DFlash, an mtp-*.gguf), else the target's
    own MTP layers (unless `mtp` is off). Without `heads` no head is loaded, nor the target's MTP layers."""
    if draft_path is not None and is_head_file(draft_path):
        head_path, draft_path = head_path or draft_path, None
    own_mtp = heads and mtp and head_path is None
    tmodel = Model(target_path, replace(target, load_mtp=True) if own_mtp else target)
    if draft_path is None:
        return _with_head(LoadedPair(tmodel, Context(tmodel, ctx)), heads, own_mtp, head_path, draft)
    dmodel = Model(draft_path, draft)
    try:
        translation = vocabulary_difference(tmodel, dmodel)  # before any context exists: a clear error, not a crash
    except Exception:
        dmodel.close()
        tmodel.close()
        raise
    dctx = Context(dmodel, draft_ctx or ctx)
    timings: list[tuple[int, int, float]] = []
    step_s = warm_up(dctx, observe=lambda *shape: timings.append(shape))
    pair = LoadedPair(tmodel, Context(tmodel, ctx), dmodel, dctx, step_s, translation, draft_timings=tuple(timings))
    return _with_head(pair, heads, own_mtp, head_path, draft)


def _with_head(pair: LoadedPair, heads: bool, own_mtp: bool, head_path, settings: ModelSettings) -> LoadedPair:
    """The pair with its head opened and priced (runtime/heads.py), where it should have one."""
    if not heads or (head_path is None and not (own_mtp and target_mtp_layers(pair.target))):
        return pair
    try:
        pair.head = open_head(pair.target_ctx, head_path, settings=settings)
        warm_up_head(pair.head)
    except HeadError as exc:
        if head_path is not None:  # a head the user named: a one-line error
            pair.close()
            raise
        pair.head_note = str(exc)  # the model's own MTP layers: it runs without them, and says why
    except BaseException:
        pair.close()
        raise
    return pair


CATCH_UP_PROBE = 32  # tokens of the one batch warm_up times: what a draft that missed some tokens pays per token


def warm_up(ctx: Context, max_steps: int = 12, observe: Callable[[int, int, float], None] | None = None) -> float:
    """What one single-token decode of this context costs in steady state, so that the drafting policy knows a
    draft model's price before trying it mid-generation (on this CPU SmolLM2's Q4_1 copy costs as much as its F16
    target, which the file sizes do not tell, and one try costs a catch-up of the whole context).

    Throwaway decodes first, as llama.cpp's own tools do: the first decode pages the weights in, and a batch like
    the draft's catch-ups sets up its buffers; then single steps until their timings settle (runtime/timing.py:
    on a GPU the first ones cost several times the later ones). The price is the median of the settled steps.

    `observe` hears the settled steps and one batch of CATCH_UP_PROBE tokens timed after them (what catching up
    costs per token: on this CPU 2.1 ms a token for SmolLM2's Q4_1 copy, a third of its 7 ms step)."""
    tok = ctx.model.bos if ctx.model.bos >= 0 else 0
    ctx.decode([tok])
    batch = min(CATCH_UP_PROBE, ctx.n_batch, ctx.n_ctx - max_steps - 2)
    if batch >= 8:
        ctx.decode([tok] * batch, "last")

    def step() -> float:
        t0 = time.perf_counter()
        ctx.decode([tok])
        return time.perf_counter() - t0

    times = steady_state(step, max_steps=min(max_steps, ctx.n_ctx - ctx.n_past - 1))
    if observe is not None:
        for spent in times[-3:]:
            observe(1, 1, spent)
        if batch >= 8 and ctx.n_past + batch < ctx.n_ctx:
            t0 = time.perf_counter()
            ctx.decode([tok] * batch, "last")
            observe(batch, 1, time.perf_counter() - t0)
    ctx.clear()
    return steady_median(times) if times else 0.0
