"""The draft/verify loop: drafters propose, the target checks every proposal in ONE batched decode."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Iterator, Sequence

import numpy as np

from localspec.runtime.context import Context
from localspec.speculative.costs import CostModel
from localspec.speculative.detok import TextStream
from localspec.speculative.draft import Draft, Drafter, DraftRequest
from localspec.speculative.sampling import SamplingParams, constrained_argmax, filtered_dist, masked_argmax, residual
from localspec.speculative.stats import Stats

TARGET = "target"


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
    origin: str  # "target" or the drafter that proposed it ("model", "schema", "history", "ngram")
    text: str  # text released with this token (UTF-8 safe; may be empty or lag behind stop-string checks)


@dataclass
class Generation:
    text: str
    tokens: list[int]
    origins: list[str]
    stats: Stats
    events: list[TokenEvent] = field(default_factory=list)


class SpecEngine:
    """Speculative decoding on one target context with an optional drafter (a model, or a hybrid of several)."""

    def __init__(self, target: Context, drafter: Drafter | None = None, *, cost_model: CostModel | None = None,
                 calibrate: bool = True):
        self.target = target
        self.drafter = drafter
        self.costs = cost_model or CostModel()
        self._calibrate = calibrate
        self.totals = Stats()
        self.last_stats: Stats | None = None
        # Tests set this to a list to record, per greedy verify row, (token emitted or accepted, target argmax).
        self.trace: list[tuple[int, int]] | None = None
        self._wrap_at: int | None = None

    # -- public API -------------------------------------------------------------------------------------------
    def generate(self, prompt: Sequence[int], params: GenParams = GenParams(), *, constraint=None,
                 cancel: threading.Event | None = None) -> Generation:
        events = list(self.stream(prompt, params, constraint=constraint, cancel=cancel))
        stats = self.last_stats
        return Generation("".join(e.text for e in events), [e.token for e in events], [e.origin for e in events],
                          stats, events)

    def stream(self, prompt: Sequence[int], params: GenParams = GenParams(), *, constraint=None,
               cancel: threading.Event | None = None) -> Iterator[TokenEvent]:
        """Yield emitted tokens as they are verified; statistics land in `last_stats` (and `totals`) at the end."""
        stats = Stats(prompt_tokens=len(prompt))
        self.last_stats = stats
        t_start = time.perf_counter()
        model = self.target.model
        text = TextStream(model.token_bytes, params.stop)
        rng = np.random.default_rng(params.sampling.seed)
        ctx = self.target
        if len(prompt) == 0:
            raise ValueError("empty prompt")
        if len(prompt) >= ctx.n_ctx:
            from localspec.errors import ContextOverflowError
            raise ContextOverflowError(f"prompt of {len(prompt)} tokens does not fit the {ctx.n_ctx}-token context")
        try:
            stats.prefill_tokens = ctx.prefill(prompt)
            stats.prefill_s = time.perf_counter() - t_start
            history = list(prompt)
            self._wrap_at = params.max_tokens - params.wrap_up if (params.wrap_up and constraint is not None) else None
            first = self._pick(ctx.logits(-1), params.sampling, constraint, rng, self._closing(1))
            stats.target_passes += 1
            if self._calibrate and not self.costs.ready:
                t_cal = time.perf_counter()
                self.costs.calibrate(ctx)
                t_start += time.perf_counter() - t_cal  # calibration is not part of this generation's time
            pending = first
            emitted_origin = TARGET
            while True:
                if model.is_eog(pending):
                    stats.finish_reason = "stop"
                    break
                if constraint is not None and not constraint.consume(pending):
                    stats.finish_reason = "grammar"  # picks are masked, so only a complete grammar refuses
                    break
                history.append(pending)
                stats.generated_tokens += 1
                piece = text.feed(pending)
                yield TokenEvent(pending, emitted_origin, piece)
                if text.stopped:
                    stats.finish_reason = "stop"
                    break
                if stats.generated_tokens >= params.max_tokens:
                    stats.finish_reason = "length"
                    break
                if constraint is not None and constraint.done():
                    stats.finish_reason = "grammar"
                    break
                if cancel is not None and cancel.is_set():
                    stats.finish_reason = "cancelled"
                    break
                if ctx.n_past + 1 >= ctx.n_ctx:
                    stats.finish_reason = "context"
                    break
                # One speculative step: draft, verify in one batch, keep the agreeing prefix + one target token.
                room = min(params.draft_max or ctx.n_batch, params.max_tokens - stats.generated_tokens - 1,
                           ctx.n_ctx - ctx.n_past - 2, ctx.n_batch - 1)
                draft = self._draft(history, room, params, constraint, rng, stats) if room > 0 else Draft()
                if self._completes(draft, constraint):
                    # Forced all the way to the grammar's end: the target has no choice left, so no verify pass
                    # (the cache gets these tokens when the conversation continues).
                    accepted, nxt = len(draft), -1
                    stats.forced += accepted
                    self._record(draft, accepted, stats)
                else:
                    accepted, nxt = self._verify(history[-1], draft, params.sampling, constraint, rng, stats)
                # Emit accepted drafts one by one (each may hit a stop condition), then the target's own token.
                stopped = False
                for i in range(accepted):
                    tok = draft.tokens[i]
                    if model.is_eog(tok):
                        stats.finish_reason = "stop"
                        stopped = True
                        break
                    history.append(tok)
                    stats.generated_tokens += 1
                    piece = text.feed(tok)
                    yield TokenEvent(tok, draft.origins[i], piece)
                    if text.stopped or stats.generated_tokens >= params.max_tokens:
                        stats.finish_reason = "stop" if text.stopped else "length"
                        stopped = True
                        break
                if stopped:
                    break
                if constraint is not None and constraint.done():
                    stats.finish_reason = "grammar"
                    break
                pending, emitted_origin = nxt, TARGET
            tail = text.finish()
            if tail:
                yield TokenEvent(-1, TARGET, tail)
        finally:
            stats.wall_s = time.perf_counter() - t_start
            stats.target_token_s = self.costs.single_token_s()
            self.totals.merge(stats)

    def remember_call(self, tokens: Sequence[int], text: str, tool: str | None = None) -> None:
        """A finished tool call, for drafters that learn from earlier calls (the history drafter)."""
        fn = getattr(self.drafter, "remember_call", None)
        if fn is not None:
            fn(tokens, text, tool)

    # -- internals -------------------------------------------------------------------------------------------
    def _closing(self, k: int) -> bool:
        """Whether the k-th generated token (1-based) is picked in wrap-up mode."""
        return self._wrap_at is not None and k > self._wrap_at

    @staticmethod
    def _allowed(constraint, closing: bool):
        if constraint is None:
            return None
        return constraint.closing_allowed() if closing else constraint.allowed()

    def _pick(self, logits: np.ndarray, sampling: SamplingParams, constraint, rng, closing: bool = False) -> int:
        if sampling.greedy:
            if closing:
                return masked_argmax(logits, self._allowed(constraint, True))
            return constrained_argmax(logits, constraint)
        return filtered_dist(logits, sampling, self._allowed(constraint, closing)).sample(rng)

    def _draft(self, history, room, params, constraint, rng, stats) -> Draft:
        if self.drafter is None:
            return Draft()
        t0 = time.perf_counter()
        draft = self.drafter.propose(DraftRequest(history, room, params.sampling, constraint, rng))
        stats.draft_s += time.perf_counter() - t0
        draft.truncate(room)
        return draft

    def _verify(self, last: int, draft: Draft, sampling: SamplingParams, constraint, rng, stats: Stats):
        """Decode [last] + draft in one batch; return (number of drafts accepted, the target's next token).

        On return the target cache holds `last` and the accepted drafts, and the constraint has consumed the
        accepted drafts (the loop consumes the returned token when it emits it).
        """
        ctx = self.target
        t0 = time.perf_counter()
        base = ctx.n_past
        n = len(draft)
        # A row needs logits unless the token after it is forced by the grammar (then the target has no choice).
        flags = [not draft.forced[i] for i in range(n)] + [draft.next_forced is None]
        ctx.decode([last] + draft.tokens, flags)
        t_dec = time.perf_counter() - t0
        self.costs.observe(n + 1, sum(flags), t_dec)
        stats.target_passes += 1
        accepted = 0
        nxt = -1
        greedy = sampling.greedy
        for i in range(n + 1):
            tok = draft.tokens[i] if i < n else None
            if tok is not None and draft.forced[i]:
                # Forced means the grammar allows nothing else, so the constrained target must pick it too.
                if constraint is None or not constraint.consume(tok):
                    raise RuntimeError(f"drafter marked token {tok} as forced but the grammar refuses it")
                accepted += 1
                stats.forced += 1
                continue
            if tok is None and draft.next_forced is not None:
                nxt = draft.next_forced  # every draft accepted and the grammar allows one token next
                break
            logits = ctx.logits(i)
            closing = self._closing(stats.generated_tokens + i + 1)
            if greedy:
                choice = self._pick(logits, sampling, constraint, rng, closing)
                if self.trace is not None:
                    self.trace.append((tok if tok == choice else choice, int(np.argmax(logits))))
                if tok is not None and choice == tok:
                    if constraint is not None:
                        constraint.consume(tok)
                    accepted += 1
                    continue
                nxt = choice
                break
            p = filtered_dist(logits, sampling, self._allowed(constraint, closing))
            if tok is None:
                nxt = p.sample(rng)
                break
            q = draft.q[i]
            px = p.prob(tok)
            qx = q.prob(tok) if q is not None else 1.0
            if qx > 0 and rng.random() < min(1.0, px / qx):
                if constraint is not None:
                    constraint.consume(tok)
                accepted += 1
                continue
            nxt = residual(p, q, tok).sample(rng)
            break
        ctx.truncate(base + 1 + accepted)
        self._record(draft, accepted, stats)
        stats.verify_s += time.perf_counter() - t0
        return accepted, nxt

    @staticmethod
    def _completes(draft: Draft, constraint) -> bool:
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
