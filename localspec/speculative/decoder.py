"""The draft/verify loop: drafters propose, the target checks every proposal in ONE batched decode."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Generator, Iterator, Sequence

import numpy as np

from localspec.errors import ContextOverflowError
from localspec.runtime.context import Context, Progress
from localspec.speculative.constraint import Constraint
from localspec.speculative.costs import CostModel, PassPrices
from localspec.speculative.detok import TextStream
from localspec.speculative.draft import Draft, Drafter, DraftRequest
from localspec.speculative.names import TARGET
from localspec.speculative.sampling import SamplingParams
from localspec.speculative.stats import Stats
from localspec.speculative.verify import DEVICE_CANDIDATES, TargetPolicy, verify


@dataclass(frozen=True)
class GenParams:
    max_tokens: int = 256
    sampling: SamplingParams = SamplingParams()
    stop: tuple[str, ...] = ()
    draft_max: int | None = None  # cap on tokens drafted per step; None leaves it to the drafters' own limits
    # Under a grammar, the last `wrap_up` tokens before max_tokens prefer tokens that close strings, arrays and
    # objects, so a call running long still ends complete and valid instead of cut off (0: off).
    wrap_up: int = 0


@dataclass
class TokenEvent:
    token: int
    origin: str  # TARGET or the drafter that proposed it: one of registry.ORIGINS
    text: str  # text released with this token (UTF-8 safe; may be empty or lag behind stop-string checks)


@dataclass
class Generation:
    text: str
    tokens: list[int]
    origins: list[str]
    stats: Stats
    events: list[TokenEvent] = field(default_factory=list)


class TokenStream(Iterator[TokenEvent]):
    """What SpecEngine.stream returns: the generation's events as they are verified, and its own statistics (filled
    in as it runs, complete once it ends or is closed)."""

    def __init__(self, events: Generator[TokenEvent, None, None], stats: Stats):
        self._events = events
        self.stats = stats

    def __iter__(self) -> "TokenStream":
        return self

    def __next__(self) -> TokenEvent:
        return next(self._events)

    def close(self) -> None:
        """Stop early; the engine's bookkeeping (statistics, totals) runs now."""
        self._events.close()


class _Run:
    """One generation's state: what the emit helper and the speculative step share."""

    def __init__(self, prompt: Sequence[int], params: GenParams, constraint: Constraint | None, text: TextStream):
        self.params = params
        self.constraint = constraint
        self.text = text
        self.history = list(prompt)
        self.stats = Stats(prompt_tokens=len(prompt))
        self.rng = np.random.default_rng(params.sampling.seed)


class SpecEngine:
    """Speculative decoding on one target context with an optional drafter (a model, or a hybrid of several)."""

    def __init__(self, target: Context, drafter: Drafter | None = None, *, cost_model: PassPrices | None = None,
                 calibrate: bool = True, draft_ctx: Context | None = None, translated: bool = False,
                 head_ctx=None):
        self.target = target
        self.drafter = drafter
        self.draft_ctx = draft_ctx  # the draft model's context, if a drafter runs one: its decodes go in the stats
        self.translated = translated  # that draft model has another vocabulary: it drafts through text (the stats say)
        self.head_ctx = head_ctx  # the draft head's context (runtime/heads.py HeadContext): likewise
        self.costs: PassPrices = cost_model or CostModel()
        self._calibrate = calibrate
        self.totals = Stats()
        self.last_stats: Stats | None = None
        # This generation's count of generated tokens after which picks are in wrap-up mode (None: never).
        self._wrap_at: int | None = None

    # -- public API -------------------------------------------------------------------------------------------
    def generate(self, prompt: Sequence[int], params: GenParams = GenParams(), *, constraint: Constraint | None = None,
                 cancel: threading.Event | None = None) -> Generation:
        tokens = self.stream(prompt, params, constraint=constraint, cancel=cancel)
        events = list(tokens)
        # This run's own statistics (never whatever last_stats names by then: it is None before any generation).
        return Generation("".join(e.text for e in events), [e.token for e in events], [e.origin for e in events],
                          tokens.stats, events)

    def stream(self, prompt: Sequence[int], params: GenParams = GenParams(), *, constraint: Constraint | None = None,
               cancel: threading.Event | None = None, on_prefill: Progress | None = None) -> "TokenStream":
        """Yield emitted tokens as they are verified; statistics land in `last_stats` (and `totals`) at the end.

        Each step emits the target's own token, drafts after it, verifies the draft in one pass and emits the
        accepted drafts; the target's token after them starts the next step. `on_prefill(done, total)` hears how
        the prompt's prefill goes (runtime/context.py)."""
        run = _Run(prompt, params, constraint, TextStream(self.target.model.token_bytes, params.stop))
        return TokenStream(self._stream(run, prompt, params, constraint, cancel, on_prefill), run.stats)

    def _stream(self, run: _Run, prompt: Sequence[int], params: GenParams, constraint: Constraint | None,
                cancel: threading.Event | None, on_prefill: Progress | None) -> Generator[TokenEvent, None, None]:
        stats = run.stats
        self.last_stats = stats
        t_start = t_begin = time.perf_counter()
        ctx = self.target
        if len(prompt) == 0:
            raise ValueError("empty prompt")
        if len(prompt) >= ctx.n_ctx:
            raise ContextOverflowError(f"prompt of {len(prompt)} tokens does not fit the {ctx.n_ctx}-token context")
        counted_at = None
        dctx = self.draft_ctx
        draft_mark = (dctx.shapes.copy(), dctx.decode_s) if dctx is not None else None
        hctx = self.head_ctx
        head_mark = (hctx.shapes.copy(), hctx.decode_s) if hctx is not None else None
        # Greedy rows are read as their few best tokens where the output layer runs, if the context can (its
        # whole rows stay on the device); sampling needs whole rows (speculative/verify.py).
        ctx.pick_on_device(DEVICE_CANDIDATES if params.sampling.greedy else 0)
        try:
            stats.prefill_tokens = ctx.prefill(prompt, progress=on_prefill)
            stats.prefill_s = time.perf_counter() - t_start
            stats.reused_prefix_tokens = ctx.last_prefill.cached
            stats.restored_prefix_tokens = ctx.last_prefill.restored
            self._wrap_at = params.max_tokens - params.wrap_up if (params.wrap_up and constraint is not None) else None
            pending = self._policy(params.sampling, constraint, stats).pick(ctx, run.rng)
            stats.target_passes += 1
            counted_at = 0  # generated_tokens when the latest pass was counted (see the `finally`)
            first = True
            while True:
                # The target's own token: not yet on the grammar (drafted tokens were consumed as they were verified).
                event, finish = self._emit(run, pending, TARGET, consume=True)
                if first:
                    stats.first_token_s = time.perf_counter() - t_begin
                if event is not None:
                    yield event
                if first and self._calibrate and not self.costs.measured.ready:
                    # After the first token is out (the user waits for it), before the first speculative step.
                    t_cal = time.perf_counter()
                    self.costs.measured.calibrate(ctx)
                    t_start += time.perf_counter() - t_cal  # calibration is not part of this generation's time
                first = False
                finish = finish or self._halt(run, cancel)
                if finish:
                    break
                draft, accepted, pending = self._step(run)
                counted_at = stats.generated_tokens
                for i in range(accepted):
                    event, finish = self._emit(run, draft.tokens[i], draft.origins[i], consume=False)
                    if event is not None:
                        yield event
                    if finish:
                        break
                if not finish and constraint is not None and constraint.done():
                    finish = "grammar"
                if finish:
                    break
            stats.finish_reason = finish
            tail = run.text.finish()
            if tail:
                yield TokenEvent(-1, TARGET, tail)
        finally:
            if counted_at == stats.generated_tokens and stats.target_passes:
                stats.target_passes -= 1  # the last pass only found the end: a pass counts when it emits a token
            stats.wall_s = time.perf_counter() - t_start
            stats.target_token_s = self.costs.measured.single_token_s()  # this machine's, whatever prices the policy
            if dctx is not None and draft_mark is not None:
                stats.draft_shapes = dctx.shapes - draft_mark[0]
                stats.draft_decode_s = dctx.decode_s - draft_mark[1]
            if hctx is not None and head_mark is not None:
                stats.head_shapes = hctx.shapes - head_mark[0]
                stats.head_decode_s = hctx.decode_s - head_mark[1]
            stats.switched_off = dict(getattr(self.drafter, "switched_off", None) or {})
            stats.draft_translated = self.translated
            take_notes = getattr(self.drafter, "take_notes", None)
            stats.drafting_notes = take_notes() if take_notes is not None else {}
            self.totals.merge(stats)
            if self.drafter is not None and stats.generated_tokens:
                self.drafter.finish(run.history, len(prompt))  # what was generated, for a later request to draft

    def calibrate_now(self, filler: int = 0, base: int = 16) -> None:
        """Time the cost model's calibration decodes now (at load), on a throwaway cache of `base` tokens, instead of
        in the middle of the first reply: there it held back the first visible text by its whole duration (the
        text of a token is released with the next one, which came after the calibration)."""
        if not self._calibrate or self.costs.measured.ready:
            return
        ctx = self.target
        if ctx.n_past:
            return  # a cache in use is not ours to wipe: the first generation calibrates as before
        ctx.decode([filler] * min(base, ctx.n_batch), "none")
        try:
            self.costs.measured.calibrate(ctx)
        finally:
            ctx.clear()

    def keep_prefix(self, tokens: Sequence[int]) -> None:
        """A prompt prefix worth computing once (a chat's system prompt and tool definitions): saved when a prefill
        first passes its end, restored by later prefills that start with it (runtime/prefixes.py)."""
        store = self.target.prefixes
        if store is not None:
            store.wanted.add(tokens)

    def remember_call(self, tokens: Sequence[int], text: str, tool: str | None = None) -> None:
        """A finished tool call, for drafters that learn from earlier calls (the history drafter)."""
        if self.drafter is not None:
            self.drafter.remember_call(tokens, text, tool)

    # -- internals -------------------------------------------------------------------------------------------
    def _emit(self, run: _Run, token: int, origin: str, *, consume: bool) -> tuple[TokenEvent | None, str]:
        """Emit one verified token: (its event, or None if it ends the generation unseen; why generation stops
        here, or "")."""
        if self.target.model.is_eog(token):
            return None, "stop"
        if consume and run.constraint is not None and not run.constraint.consume(token):
            return None, "grammar"  # picks are masked, so only a complete grammar refuses
        run.history.append(token)
        run.stats.generated_tokens += 1
        event = TokenEvent(token, origin, run.text.feed(token))
        if run.text.stopped:
            return event, "stop"
        if run.stats.generated_tokens >= run.params.max_tokens:
            return event, "length"
        return event, ""

    def _halt(self, run: _Run, cancel: threading.Event | None) -> str:
        """Why no further step runs after the target's own token ("" if one does)."""
        if run.constraint is not None and run.constraint.done():
            return "grammar"
        if cancel is not None and cancel.is_set():
            return "cancelled"
        ctx = self.target
        if ctx.n_past + 1 >= ctx.n_ctx:
            return "context"
        return ""

    def _step(self, run: _Run) -> tuple[Draft, int, int]:
        """One speculative step: draft, verify in one batch; (the draft, how many of its tokens the target accepted,
        the target's next token)."""
        ctx, params, stats = self.target, run.params, run.stats
        room = min(params.draft_max or ctx.n_batch, params.max_tokens - stats.generated_tokens - 1,
                   ctx.n_ctx - ctx.n_past - 2, ctx.max_draft, ctx.max_rows - 1)
        draft = self._draft(run, room) if room > 0 else Draft()
        if self._completes(draft, run.constraint):
            # Forced all the way to the grammar's end: the target has no choice left, so no verify pass (the cache
            # gets these tokens when the conversation continues).
            stats.forced += len(draft)
            self._record(draft, len(draft), stats)
            return draft, len(draft), -1
        accepted, nxt = self._verify(run.history[-1], draft, params.sampling, run.constraint, run.rng, stats)
        return draft, accepted, nxt

    def _draft(self, run: _Run, room: int) -> Draft:
        if self.drafter is None:
            return Draft()
        t0 = time.perf_counter()
        remaining = run.params.max_tokens - run.stats.generated_tokens
        draft = self.drafter.propose(DraftRequest(run.history, room, run.params.sampling, run.constraint, run.rng,
                                                  remaining))
        run.stats.draft_s += time.perf_counter() - t0
        draft.truncate(room)
        return draft

    def _policy(self, sampling: SamplingParams, constraint: Constraint | None, stats: Stats) -> TargetPolicy:
        """How the target picks at each row of the next pass (row 0: the next token generated)."""
        wrap_from = None if self._wrap_at is None else self._wrap_at - stats.generated_tokens
        return TargetPolicy(sampling, constraint, wrap_from)

    def _verify(self, last: int, draft: Draft, sampling: SamplingParams, constraint: Constraint | None,
                rng: np.random.Generator, stats: Stats) -> tuple[int, int]:
        """Decode [last] + draft in one batch and judge it (speculative/verify.py); return (number of drafts
        accepted, the target's next token).

        On return the target cache holds `last` and the accepted drafts, and the constraint has consumed the
        accepted drafts (the loop consumes the returned token when it emits it). benchmarks/toolcall_profile.py
        wraps this method to time each pass: keep its signature.
        """
        ctx = self.target
        t0 = time.perf_counter()
        base = ctx.n_past
        # A row needs logits unless the token after it is forced by the grammar (then the target has no choice).
        flags = [not f for f in draft.forced] + [draft.next_forced is None]
        ctx.decode([last] + draft.tokens, flags)
        t_decode = time.perf_counter() - t0
        rows = sum(flags)
        self.costs.observe(len(draft) + 1, rows, t_decode, base)
        stats.pass_shapes[(len(draft) + 1, rows)] += 1
        stats.decode_s += t_decode
        stats.target_passes += 1
        verdict = verify(draft, ctx, self._policy(sampling, constraint, stats), rng)
        ctx.truncate(base + 1 + verdict.accepted)
        stats.forced += verdict.forced
        self._record(draft, verdict.accepted, stats)
        spent = time.perf_counter() - t0
        stats.verify_s += spent
        if not draft.tokens:
            stats.plain_passes += 1
            stats.plain_verify_s += spent
            stats.plain_decode_s += t_decode
        return verdict.accepted, verdict.next_token

    @staticmethod
    def _completes(draft: Draft, constraint: Constraint | None) -> bool:
        """Whether the draft is all forced tokens after which the grammar is complete (consumed if so)."""
        if constraint is None or not draft.tokens or not all(draft.forced):
            return False
        n = 0
        for tok in draft.tokens:
            if not constraint.consume(tok):
                break
            n += 1
        if n == len(draft) and constraint.done():
            return True
        constraint.rollback(n)
        return False

    def _record(self, draft: Draft, accepted: int, stats: Stats) -> None:
        """Bookkeeping after a step: per drafter and per position; drafters learn what was accepted."""
        n = len(draft)
        for i in range(n):
            ok = i < accepted
            stats.record_position(i, ok)
            ds = stats.drafters[draft.origins[i]]
            ds.drafted += 1
            ds.accepted += ok
        stats.drafted += n
        stats.accepted += accepted
        if self.drafter is not None:
            self.drafter.observe(draft, accepted)
