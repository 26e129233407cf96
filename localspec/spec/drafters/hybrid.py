"""Hybrid drafting: forced tokens first, then the candidate with the best expected yield, for as long as one more
drafted token is expected to pay for its share of the verify pass.

Draft length is not a fixed K: every drafted token is kept only while P(the verifier reaches it and accepts it)
exceeds what it costs to verify one more row, measured on this machine (CostModel) relative to one plain decoding
step. Acceptance is tracked per drafter and per match length, so unreliable sources stop drafting by themselves.
"""

from __future__ import annotations

import time

from localspec.spec.costs import CostModel
from localspec.spec.draft import Draft, DraftRequest

# Prior per-token acceptance before anything is observed, by drafter and match-length bucket.
_PRIOR = {"history": 0.75, "ngram": 0.5, "model": 0.7, "schema": 0.5}
_EMA = 0.15


_CLOSERS = ('",', '"}', '"}}', '"', ',', '}', '}}', '"]', ']', '],', ']}', ']}}')


def _bucket(match_len: int) -> int:
    return min(match_len, 6)


class HybridDrafter:
    name = "hybrid"

    def __init__(self, *, costs: CostModel, schema: bool = True, history=None, ngram=None, model=None,
                 max_len: int = 64, tokenize=None):
        self.costs = costs
        self.schema = schema
        # Guesses that a JSON value ends here ('",' '"}' ',' '}' ...): once one is accepted, the grammar forces
        # the next key, so a value's end and the following structure come out of the same verify pass.
        self.closers = sorted({tuple(tokenize(c)) for c in _CLOSERS} if (tokenize and schema) else set(),
                              key=len, reverse=True)
        self.sources = [d for d in (history, ngram) if d is not None]
        self.model = model
        self.max_len = max_len
        self.rates: dict[tuple[str, int], float] = {}
        self._keys: list[tuple[str, int] | None] = []  # acceptance bucket of each token of the last draft
        self.model_token_s = 0.0  # measured cost of one draft-model token
        self._fixed = False

    # -- acceptance bookkeeping --------------------------------------------------------------------------------
    def rate(self, name: str, match_len: int) -> float:
        if self._fixed:
            return _PRIOR.get(name, 0.5)
        return self.rates.get((name, _bucket(match_len)), _PRIOR.get(name, 0.5))

    def observe(self, draft: Draft, n_accepted: int) -> None:
        # Only positions the verifier actually judged: accepted ones and the first rejected one.
        for i, key in enumerate(self._keys[: n_accepted + 1]):
            if key is None:
                continue
            old = self.rates.get(key, _PRIOR.get(key[0], 0.5))
            self.rates[key] = (1 - _EMA) * old + _EMA * (1.0 if i < n_accepted else 0.0)
        if self.model is not None:
            self.model.observe(draft, n_accepted)

    def reset(self) -> None:
        self.rates.clear()

    def remember_call(self, tokens, text: str, tool: str | None = None) -> None:
        for src in self.sources:
            if hasattr(src, "add_call_tokens"):
                src.add_call_tokens(tokens, text, tool)

    # -- costs -----------------------------------------------------------------------------------------------
    def _threshold(self, extra_s: float = 0.0) -> float:
        """Minimum probability of being accepted for one more drafted row to pay off."""
        t1 = self.costs.single_token_s()
        if not t1 or self._fixed:
            return 0.15
        marginal = max(self.costs.cost(17, 17) - self.costs.cost(16, 16), 0.0)
        return min(0.95, (marginal + extra_s) / t1)

    # -- drafting --------------------------------------------------------------------------------------------
    def propose(self, req: DraftRequest) -> Draft:
        draft = Draft()
        self._keys = []
        # Seeded sampling must replay exactly: drafting then depends on nothing measured or learned, since the
        # accept/resample draws (and so the output) follow the drafts.
        self._fixed = not req.sampling.greedy and req.sampling.seed is not None
        cons = req.constraint
        budget = min(req.max_len, self.max_len)
        reach = 1.0  # probability that verification gets this far
        thr = self._threshold()
        consumed = 0
        context = list(req.history)
        try:
            while len(draft) < budget:
                room = budget - len(draft)
                if cons is not None and self.schema:
                    ff = cons.forced()[:room]
                    if ff:
                        n = cons.consume_valid_prefix(ff)
                        consumed += n
                        for t in ff[:n]:
                            draft.add(t, "schema", forced=True)
                            self._keys.append(None)
                        if n < len(ff):
                            break
                        continue
                    if cons.done():
                        break
                best = self._best_candidate(context + draft.tokens, room, cons, reach, thr)
                if best is None and cons is not None and self.closers and draft.origins[-1:] != ["schema"]:
                    best = self._closer(cons, room, reach, thr)
                if best is None and self.model is not None:
                    best = self._model_candidate(req, context + draft.tokens, room, cons, reach)
                if best is None:
                    break
                name, toks, key, a = best
                if cons is not None:
                    n = cons.consume_valid_prefix(toks)
                    consumed += n
                    toks = toks[:n]
                if not toks:
                    break
                for t in toks:
                    draft.add(t, name, q=None)
                    self._keys.append(key)
                    reach *= a
                if reach < thr:
                    break
        finally:
            if cons is not None and consumed:
                cons.rollback(consumed)
        return draft

    def _take(self, toks, a, reach, thr) -> int:
        """How many of a candidate's tokens are worth verifying."""
        n = 0
        for _ in toks:
            reach *= a
            if reach < thr:
                break
            n += 1
        return n

    def _best_candidate(self, context, room, cons, reach, thr):
        best, best_value = None, 0.0
        for src in self.sources:
            toks, m = src.candidate(context, room)
            if not toks:
                continue
            if cons is not None:
                toks = toks[: cons.matcher.validate_tokens(toks)]
            a = self.rate(src.name, m)
            n = self._take(toks, a, reach, thr)
            if n == 0:
                continue
            # Expected accepted tokens: sum of reach * a^i over the tokens kept.
            value = sum(reach * a ** (i + 1) for i in range(n))
            if value > best_value:
                best, best_value = (src.name, toks[:n], (src.name, _bucket(m)), a), value
        return best

    def _closer(self, cons, room, reach, thr):
        a = self.rate("schema", 1)
        if reach * a < thr:
            return None
        for seq in self.closers:
            if len(seq) <= room and cons.matcher.validate_tokens(list(seq)) == len(seq):
                return "schema", list(seq), ("schema", 1), a
        return None

    def _model_candidate(self, req, context, room, cons, reach):
        a = self.rate("model", 0)
        thr = self._threshold(0.0 if self._fixed else self.model_token_s)
        if reach * a < thr:
            return None  # on this machine the draft model costs more than it saves right now
        sub = DraftRequest(context, min(room, self.model.max_len), req.sampling, cons, req.rng)
        t0 = time.perf_counter()
        d = self.model.propose(sub)
        if len(d):
            per = (time.perf_counter() - t0) / len(d)
            self.model_token_s = per if not self.model_token_s else 0.8 * self.model_token_s + 0.2 * per
        n = self._take(d.tokens, a, reach, thr)
        if n == 0:
            return None
        return "model", d.tokens[:n], ("model", 0), a
