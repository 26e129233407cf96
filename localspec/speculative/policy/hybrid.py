"""Hybrid drafting: forced tokens first, then the candidate with the best expected yield, and the draft cut where
its expected gain peaks.

Draft length is not a fixed K. An accepted guess (a token the grammar does not force) saves a whole target pass;
every drafted row costs its share of the batch, and a guess also the logits of the row before it, all measured on
this machine (CostModel). Acceptance is tracked per source, the first token of each candidate (the guess at a
choice point) apart from the tokens that continue it, so unreliable sources stop drafting by themselves.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Sequence

from localspec.speculative.constraint import Constraint
from localspec.speculative.costs import PassPrices
from localspec.speculative.draft import Candidate, CandidateDrafter, Draft, Drafter, DraftRequest
from localspec.speculative.indexes.prefix import shared_len
from localspec.speculative.policy.gate import MIN_COST_SHARE, SourceGate
from localspec.speculative.policy.model_price import ModelPrice
from localspec.speculative.policy.rates import (
    FLOOR,
    LINE,
    PROSE,
    START,
    THRESHOLD_UNMEASURED,
    AcceptanceRates,
    base,
    depth,
)

if TYPE_CHECKING:  # the draft model's module loads llama.cpp; the policy's tests run without it
    from localspec.speculative.heads.base import HeadDrafter
    from localspec.speculative.sources.draft_model import ModelDrafter

log = logging.getLogger("localspec.drafting")  # LOCALSPEC_LOG=debug: one line per gate window (debug_log.py)

# Guesses that a value ends here, longest first. Two kinds, each with its own learned rate: another key follows
# (',' and what merges with it), or the object or call ends.
CLOSERS = ('"}}', ']}}', '"},', '"}', '",', '"]', ']}', '],', '}}', '"', ',', '}', ']')
_CLOSER_HEADS = {c[:i] for c in CLOSERS for i in range(1, len(c))}  # forced text that may merge into a closer
# Used when nothing is measured yet (and when seeded sampling must not depend on measurements): a pass's fixed
# cost, a batch row, a logits row, in units of a plain step.
UNIT_COSTS_UNMEASURED = (1.0, 0.08, 0.1)
MIN_FIXED_SHARE = 0.2  # a pass's fixed cost is at least this share of a plain step, whatever the fit says


def _closer_key(text: str) -> str:
    return "close-next" if text.endswith(",") else "close-end"


def cut_length(probs: Sequence[float], forced: Sequence[bool], c0: float, c1: float, c2: float) -> int:
    """Length of the draft prefix with the best expected gain, from the probability that verification reaches
    each drafted token (`probs`, falling) and whether the grammar forces it. An accepted guess (a token the grammar
    does not force) saves a whole target pass, its fixed cost c0; every drafted row costs c1, and a guess also needs
    the logits of the row before it (c2): both are wasted when verification stops earlier. Forced tokens save
    nothing by themselves (the next pass would carry them as well); they only carry the guesses after them. Ties go
    to the longer prefix."""
    best_n, best_v, v, prev = 0, 0.0, 0.0, 1.0
    for i, (p, is_forced) in enumerate(zip(probs, forced)):
        v -= (1 - p) * c1
        if not is_forced:
            v += p * c0 - (1 - prev) * c2
        prev = p
        if v >= best_v - 1e-12:
            best_n, best_v = i + 1, v
    return best_n


class Priced:
    """A candidate as the policy prices it: its tokens, whose acceptance is tracked under `key`. The first `skip`
    tokens are text the grammar forces (tracked as "bytes"); the source's own guess starts after them (bucket
    `start`), and the tokens that continue it are tracked by depth, or at the LINE rate where a copy may stop."""

    __slots__ = ("name", "toks", "key", "rates", "start", "skip", "forced_rate", "breaks")

    def __init__(self, name, toks, key, rates, start, skip=0, forced_rate=1.0, breaks=()):
        self.name, self.toks, self.key, self.rates, self.start = name, toks, key, rates, start
        self.skip, self.forced_rate = skip, forced_rate
        self.breaks = frozenset(breaks)

    def _level(self, i: int, d: int) -> int:
        return LINE if i in self.breaks else depth(d)

    def bucket(self, i: int) -> tuple[str, int]:
        d = i - self.skip
        return ("bytes", START) if d < 0 else (self.key, self._level(i, d) if d else self.start)

    def rate(self, i: int) -> float:
        d = i - self.skip
        return self.forced_rate if d < 0 else self.rates[self._level(i, d) if d else 0]


class HybridDrafter(Drafter):
    """Drafts from a list of candidate sources (speculative/sources/table.py builds them), the schema's forced tokens and
    value ends, and the draft model, priced by this machine's costs and the sources' learned acceptance."""

    name = "hybrid"  # never an origin: each token reports the source that proposed it

    def __init__(self, *, costs: PassPrices, sources: Sequence[CandidateDrafter] = (), schema: bool = True,
                 model: ModelDrafter | None = None, model_cost_ratio: float = 0.0, model_token_s: float = 0.0,
                 max_len: int = 64, tokenize=None, heads: Sequence[tuple[HeadDrafter, float]] = ()):
        self.costs = costs
        self.schema = schema
        # Guesses that a JSON value ends here ('",' '"}' ',' '}' ...): once one is accepted, the grammar forces
        # the next key, so a value's end and the following structure come out of the same verify pass.
        self.closers: list[tuple[tuple[int, ...], str, bool]] = []  # (tokens, rate key, ends a string)
        for c in CLOSERS if (tokenize and schema) else ():
            toks = tuple(tokenize(c))
            if all(toks != t for t, *_ in self.closers):
                self.closers.append((toks, _closer_key(c), c.startswith('"')))
        self.tokenize = tokenize
        self.sources: list[CandidateDrafter] = list(sources)
        # Sources whose candidates are whole values: once one is drafted in full, the value's end is guessed next.
        self.whole_values = {d.rate_key for d in self.sources if d.whole_value}
        self.model = model
        self.max_len = max_len
        self.rates = AcceptanceRates()
        self._keys: list[tuple[str, int] | None] = []  # acceptance bucket of each token of the last draft
        # What one draft-model token costs (policy/model_price.py): measured from its steps, starting from the
        # load-time steady-state timing, or a cost profile's draft step (that machine's price, fixed).
        profile_draft = getattr(costs, "draft_step_s", None)
        self.model_price = ModelPrice(model_token_s, fixed_s=profile_draft() if callable(profile_draft) else 0.0)
        # Before any measurement: the draft's cost per token relative to a target step. Running it once just to
        # measure would cost a catch-up prefill of the whole context, so a costly draft would never pay that back.
        self.model_cost_ratio = model_cost_ratio
        # The target's draft heads (speculative/heads/), each with its step timed at load: asked before the draft
        # model, priced the same way (the profile's head step where a cost profile prices one).
        profile_head = getattr(costs, "head_step_s", None)
        self.heads = [(h, ModelPrice(step_s, fixed_s=profile_head(h.name) if callable(profile_head) else 0.0))
                      for h, step_s in heads]
        # Drafters not paying on this machine right now, and why (Stats.switched_off).
        self.switched_off: dict[str, str] = {}
        self._gates = {False: SourceGate(prose=False), True: SourceGate(prose=True)}
        self._now = self._gates[False]  # the gate of the latest proposal

    # -- acceptance bookkeeping --------------------------------------------------------------------------------
    def rate(self, key: str, bucket: int) -> float:
        return self.rates(key, bucket)

    def observe(self, draft: Draft, n_accepted: int) -> None:
        saved = self._now.saved
        for key in self._keys[:n_accepted]:
            if key is not None:
                k = base(key[0])
                saved[k] = saved.get(k, 0) + 1
        self.rates.learn(self._keys, n_accepted)
        if self.model is not None:
            self.model.observe(draft, n_accepted)

    def reset(self) -> None:
        self.rates.clear()

    def remember_call(self, tokens: Sequence[int], text: str, tool: str | None = None) -> None:
        for src in self.sources:
            src.add_call_tokens(tokens, text, tool)

    def finish(self, tokens: Sequence[int], prompt_len: int) -> None:
        for src in self.sources:
            src.finish(tokens, prompt_len)

    # -- costs -----------------------------------------------------------------------------------------------
    def _gate(self, gate: SourceGate) -> None:
        """At the end of each window, rest the sources whose lookups cost more than their accepted tokens saved
        (see SourceGate). A source keeps its note in `switched_off` until it has run again and paid."""
        for key, n in gate.rest.items():
            gate.rest[key] = n - 1
        gate.asked += 1
        if gate.asked < gate.window:
            return
        step = self.costs.single_token_s()
        window = []  # what the debug log says of each source asked
        for src in self.sources:
            key = src.rate_key
            if key not in gate.lookup_s:
                continue  # it sat out this window (or never looked)
            spent, saved = gate.lookup_s[key], gate.saved.get(key, 0) * step
            switch = "on"
            if step and spent - saved > MIN_COST_SHARE * gate.asked * step and (gate.prose or gate.drafted.get(key, 0)):
                gate.rest[key] = rest = gate.rest_for(key)
                self.switched_off[gate.label(key)] = (
                    f"lookups cost {1000 * spent / gate.asked:.3f} ms a step, saved {1000 * saved / gate.asked:.3f} "
                    f"ms: off for {rest} steps")
                switch = f"off for {rest}"
            else:
                gate.fails.pop(key, None)
                self.switched_off.pop(gate.label(key), None)
            window.append(f"{key} rows={gate.drafted.get(key, 0)} accepted={gate.saved.get(key, 0)} "
                          f"lookup_ms={1000 * spent:.3f} saved_ms={1000 * saved:.3f} {switch}")
        log.debug("gate window %s: %d proposals, step_ms=%.3f, resting=%s | %s", "prose" if gate.prose else "grammar",
                  gate.asked, 1000 * step, sorted(k for k, n in gate.rest.items() if n > 0) or "-",
                  "; ".join(window) or "no source asked")
        gate.asked, gate.lookup_s, gate.saved, gate.drafted = 0, {}, {}, {}

    def _model_pays(self, token_s: float, thr: float, key: str = "model") -> None:
        """Say in the stats when the draft model (or head `key`) is not drafting because it costs more than it can
        save."""
        if thr >= self.rate(key, START):
            step = self.costs.single_token_s()
            self.switched_off[key] = (f"a draft token costs {1000 * token_s:.1f} ms against a {1000 * step:.1f} "
                                      "ms target step: not drafting (tried again now and then, to be priced anew)")
        else:
            self.switched_off.pop(key, None)

    def _threshold(self, extra_s: float = 0.0) -> float:
        """Minimum probability of being accepted for one more drafted row to pay off."""
        t1 = self.costs.single_token_s()
        if not t1 or self.rates.fixed:
            return THRESHOLD_UNMEASURED
        marginal = max(self.costs.cost(17, 17) - self.costs.cost(16, 16), 0.0)
        return min(0.95, (marginal + extra_s) / t1)

    # -- drafting --------------------------------------------------------------------------------------------
    def propose(self, req: DraftRequest) -> Draft:
        draft = Draft()
        self._keys = []
        # Seeded sampling must replay exactly: drafting then depends on nothing measured or learned, since the
        # accept/resample draws (and so the output) follow the drafts.
        self.rates.fixed = not req.sampling.greedy and req.sampling.seed is not None
        cons = req.constraint
        self._now = self._gates[cons is None]
        if not self.rates.fixed:
            self._gate(self._now)
        budget = min(req.max_len, self.max_len)
        reach = 1.0  # probability that verification gets this far
        thr = FLOOR  # candidates are drafted generously, then cut where the expected gain peaks (_cut)
        probs: list[float] = []  # reach after each drafted token
        tail = None  # where forced tokens that complete the grammar begin
        consumed = 0
        context = list(req.history)
        ends_value = False  # the last candidate was a whole value (a span of the request): a closer comes next
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
                            probs.append(reach)
                        if n < len(ff):
                            break
                        if cons.done():
                            tail = len(draft) - n
                        continue
                    if cons.done():
                        break
                best = None
                if ends_value and cons is not None and self.closers:
                    best = self._closer(cons, room, reach, thr)
                if best is None:
                    # Forced text, unless a source agrees with it and goes further (a repeated call, a loop).
                    fb = self._forced_bytes(cons, room, reach, thr) if cons is not None and self.schema else None
                    best = self._best_candidate(context + draft.tokens, room, cons, reach, thr, *(fb or ()))
                if best is None and cons is not None and self.closers and draft.origins[-1:] != ["schema"]:
                    best = self._closer(cons, room, reach, thr)
                for head, price in self.heads if best is None else ():
                    # A head, like the draft model, only where no source has a guess (see below); before the model:
                    # it reads the target's own hidden states and costs a layer, not a model. Once per proposal,
                    # as llama.cpp's (its draft_max tokens): asked again it would read its own draft once more.
                    if head.name in draft.origins:
                        continue
                    best = self._learned_candidate(head, price, 0.0, req, context + draft.tokens, room, cons, reach)
                    if best is not None:
                        break
                if best is None and self.model is not None:
                    # Only where no source has a guess: asking the model beside a weak candidate (tried, issue 26)
                    # paid its whole draft for each proposal the candidate then won; on the H200 profile that took
                    # Gemma's workspace suite from 4.99x to 1.94x projected at 4% more tokens a pass.
                    best = self._model_candidate(req, context + draft.tokens, room, cons, reach)
                if best is None:
                    break
                taken = 0
                for t in best.toks:
                    if cons is not None:
                        # Where the grammar takes over, stop: the outer loop adds those tokens as forced, so the
                        # target needs no logits for them and they cost no acceptance probability.
                        if taken and self.schema and cons.forced():
                            break
                        if not cons.consume(t):
                            break
                        consumed += 1
                    draft.add(t, best.name, q=None)
                    self._keys.append(best.bucket(taken))
                    reach *= best.rate(taken)
                    probs.append(reach)
                    taken += 1
                ends_value = taken == len(best.toks) and base(best.key) in self.whole_values
                if not taken or reach < thr:
                    break
        finally:
            if cons is not None and consumed:
                cons.rollback(consumed)
        keep = self._cut(draft, probs)
        if tail:
            # Forced tokens that end the grammar need no verify pass once they are all that is left (the engine
            # emits them as they are), so after a guess they would only cost rows.
            keep = min(keep, tail)
        draft.truncate(keep)
        del self._keys[keep:]
        drafted = self._now.drafted
        for key in self._keys:
            if key is not None:
                k = base(key[0])
                drafted[k] = drafted.get(k, 0) + 1
        if cons is not None and self.schema and keep:
            draft.next_forced = self._forced_after(cons, draft.tokens)
        return draft

    @staticmethod
    def _forced_after(cons: Constraint, tokens: list[int]) -> int | None:
        """The token the grammar forces after `tokens`, if any (the state is left as it was)."""
        n = cons.consume_valid_prefix(tokens)
        try:
            ff = cons.forced() if n == len(tokens) and not cons.done() else []
        finally:
            cons.rollback(n)
        return ff[0] if ff else None

    def _cut(self, draft: Draft, probs: list[float]) -> int:
        """Where to cut the draft (cut_length) with this machine's unit costs."""
        return cut_length(probs, draft.forced, *self._unit_costs())

    def _unit_costs(self) -> tuple[float, float, float]:
        """(fixed cost of a pass, cost per row, cost per logits row), measured; fixed proportions when seeded."""
        coef = None if self.rates.fixed else self.costs.coefficients()
        t1 = self.costs.single_token_s()
        if coef is None or not t1:
            return UNIT_COSTS_UNMEASURED
        _, c1, c2 = coef
        # A row never costs more than a plain step of its own (a pass of two rows is cheaper than two passes); a fit
        # over timings that other processes stalled can say otherwise (140 ms a row against a 38 ms step was seen
        # while a compiler ran), which would stop all drafting. Such rows are scaled down to what a step allows.
        over = (c1 + c2) / ((1 - MIN_FIXED_SHARE) * t1)
        if over > 1:
            c1, c2 = c1 / over, c2 / over
        return max(t1 - c1 - c2, MIN_FIXED_SHARE * t1), c1, c2

    @staticmethod
    def _take(cand: Priced, reach, thr, row_share: float = 0.0, limit: int | None = None) -> tuple[int, float]:
        """How many of a candidate's tokens are worth drafting, and its score: the expected number accepted,
        less `row_share` (a row's cost in units of a plain decoding step) for each token reached with at least
        that probability: a long tail of unlikely tokens must not outbid a short likely candidate."""
        n, value = 0, 0.0
        for i in range(len(cand.toks) if limit is None else min(limit, len(cand.toks))):
            reach *= cand.rate(i)
            if reach < thr:
                break
            n += 1
            value += max(reach - row_share, 0.0)
        return n, value

    def _row_share(self) -> float:
        """A drafted row's cost in units of a plain decoding step."""
        c0, c1, c2 = self._unit_costs()
        return (c1 + c2) / (c0 + c1 + c2)

    def _best_candidate(self, context, room, cons: Constraint | None, reach, thr, best=None, best_value=-1.0):
        """The sources' candidate with the highest score (`best`, scored `best_value`, unless one beats it).
        Where `best` is forced text, a source's tokens that spell it are tracked as forced text, not as its guess."""
        share = self._row_share()
        forced = best.toks if best is not None and best.key == "bytes" else []
        gate = self._now
        for src in self.sources:
            key = src.rate_key  # acceptance is tracked per source, even under a shared name
            if gate.rest.get(key, 0) > 0 or (cons is None and src.grammar_only) or (src.remembers and self.rates.fixed):
                continue
            t0 = time.perf_counter()
            found: Candidate | None = src.candidate(context, room, cons)
            gate.lookup_s[key] = gate.lookup_s.get(key, 0.0) + time.perf_counter() - t0
            if found is None or not found.tokens:
                continue
            key = found.key + (PROSE if cons is None else "")
            toks = found.tokens if cons is None else found.tokens[: cons.valid_prefix(found.tokens)]
            start = START - src.bucket(found.match)
            skip = shared_len(toks, forced)
            cand = Priced(src.name, toks, key, self.rates.of_candidate(key, start), start, skip,
                           self.rates("bytes", START), found.breaks)
            n, value = self._take(cand, reach, thr, share)
            if not n:
                continue
            cand.toks = toks[:n]
            if best is not None and shared_len(best.toks, cand.toks) < min(n, len(best.toks)):
                # Different guesses are compared over the same number of tokens: what follows the shorter one is
                # drafted after it all the same (the rest of a value, the structure after it), so a candidate that
                # runs on into the next key or call must not outbid a likelier guess at this value by its length.
                h = min(n, len(best.toks))
                wins = self._take(cand, reach, thr, share, h)[1] > self._take(best, reach, thr, share, h)[1]
                # A source that only picks between alternatives (which tool) wins on the odds of its pick alone.
                if src.picks:
                    wins = wins or cand.rate(skip) > best.rate(best.skip)
            else:
                wins = value > best_value
            if wins:
                best, best_value = cand, value
        return best

    def _forced_bytes(self, cons: Constraint, room, reach, thr):
        """Text the grammar forces where no token is forced, because it can be split into tokens in more than one
        way (' "' after a comma, the rest of an enum value, ': ' before a number): its usual tokenisation is a
        near-certain guess. The last token is left out when there are several: it might merge with what follows;
        a lone '"' or ']' usually does ('",' '"]'), so how the value ends is the closers' guess. Returns
        (candidate, score) or None."""
        if self.tokenize is None:
            return None
        data = cons.forced_bytes()
        if not data:
            return None
        text = data.decode("utf-8", "ignore")
        if text in _CLOSER_HEADS and (text[0] != '"' or cons.in_string()):  # not a value's opening quote
            best = self._closer(cons, room, reach, thr)
            return (best, reach * best.rate(0)) if best else None
        toks = self.tokenize(text)
        if len(toks) > 1:
            toks = toks[:-1]
        toks = toks[: min(room, cons.valid_prefix(toks))]
        if not toks:
            return None
        cand = Priced("schema", toks, "bytes", self.rates.of_candidate("bytes", START), START)
        n, value = self._take(cand, reach, thr, self._row_share())
        cand.toks = toks[:n]
        return (cand, value) if n else None

    def _closer(self, cons: Constraint, room, reach, thr):
        """The likelier way to end the value here: the first valid closer of each kind, by learned rate. Inside a
        string only a quote ends it (',' or '}}' there would be string content)."""
        best = None
        quote = cons.in_string()
        for seq, key, quoted in self.closers:
            if (best is not None and best.key == key) or quoted != quote:
                continue
            if len(seq) <= room and cons.valid_prefix(seq) == len(seq):
                rates = self.rates.of_candidate(key, START)
                if best is None or rates[0] > best.rates[0]:
                    best = Priced("schema", list(seq), key, rates, START)
        if best is None or reach * best.rates[0] < thr:
            return None
        return best

    def _model_candidate(self, req, context, room, cons, reach):
        assert self.model is not None
        return self._learned_candidate(self.model, self.model_price, self.model_cost_ratio, req, context, room, cons,
                                       reach)

    def _learned_candidate(self, drafter, price: ModelPrice, cost_ratio: float, req, context, room, cons, reach):
        """The draft model's (or a head's) candidate, if its price lets it draft: `drafter` reports each call as a
        ModelCall (last_call), tracked under its name."""
        key = drafter.name
        rates = self.rates.of_candidate(key, START)
        token_s = price.price(cost_ratio * self.costs.single_token_s())
        thr = self._threshold(0.0 if self.rates.fixed else token_s)
        if not self.rates.fixed:
            self._model_pays(token_s, thr, key)
        trying = reach * rates[0] < thr
        if trying:
            # On this machine the draft model costs more than it saves right now. Now and then it runs anyway, to
            # be priced again (a first price may be wrong; a GPU warms up): what it drafts then is still judged.
            if self.rates.fixed or not price.sat_out():
                return None
        else:
            price.paid()
        sub = DraftRequest(context, min(room, drafter.max_len), req.sampling, cons, req.rng)
        d = drafter.propose(sub)
        price.observe(drafter.last_call, anew=trying)
        cand = Priced(key, d.tokens, key, rates, START)
        n, _ = self._take(cand, reach, thr)
        if n == 0:
            return None
        cand.toks = d.tokens[:n]
        return cand
