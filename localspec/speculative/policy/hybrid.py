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
from localspec.speculative.policy.gate import MODEL, SourceGate, Verdict
from localspec.speculative.policy.model_price import PLAUSIBLE, ModelPrice, proposal_gain, worth_catching_up
from localspec.speculative.policy.pricing import Pricing
from localspec.speculative.policy.prose_screen import ProseScreen
from localspec.speculative.policy.rates import FLOOR, LINE, PROSE, START, AcceptanceRates, base, depth

if TYPE_CHECKING:  # the draft model's module loads llama.cpp; the policy's tests run without it
    from localspec.speculative.heads.base import HeadDrafter
    from localspec.speculative.sources.draft_model import ModelDrafter

# A draft model (or head) priced out sits out this many proposals on that price before it is priced again: pricing
# it at every step cost SmolLM2 F16 0.13 ms of a 8.6 ms step (prose, where it is asked wherever no source guesses),
# and its price moves only with its own decodes, its acceptance and the target's refits.
QUIET_FOR = 7

log = logging.getLogger("localspec.drafting")  # LOCALSPEC_LOG=debug: one line per gate window (debug_log.py)

# Guesses that a value ends here, longest first. Two kinds, each with its own learned rate: another key follows
# (',' and what merges with it), or the object or call ends.
CLOSERS = ('"}}', ']}}', '"},', '"}', '",', '"]', ']}', '],', '}}', '"', ',', '}', ']')
_CLOSER_HEADS = {c[:i] for c in CLOSERS for i in range(1, len(c))}  # forced text that may merge into a closer


def _closer_key(text: str) -> str:
    return "close-next" if text.endswith(",") else "close-end"


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
        self.pricing = Pricing(costs, self.rates)
        self._keys: list[tuple[str, int] | None] = []  # acceptance bucket of each token of the last draft
        # What a draft-model token costs (policy/model_price.py): the draft context's own decodes, starting from
        # the steps timed at load, or a cost profile's draft step (that machine's price, fixed). Before anything is
        # measured, the file sizes' ratio of a target step (on a CPU decoding streams every weight once a step).
        if model is not None and model_token_s and not model.costs.single_token_s():
            for _ in range(3):
                model.costs.observe(1, 1, model_token_s)
        self.model_price = ModelPrice(model.costs if model is not None else None, profile=costs)
        self.model_cost_ratio = model_cost_ratio
        # The target's draft heads (speculative/heads/), each with its step timed at load: asked before the draft
        # model, and priced the same way, by their own decodes (the profile's head step where it prices one).
        self.heads: list[tuple[HeadDrafter, ModelPrice]] = []
        for head, step_s in heads:
            if step_s and not head.costs.single_token_s():
                for _ in range(3):
                    head.costs.observe(1, 1, step_s)
            self.heads.append((head, ModelPrice(head.costs, profile=costs, head=head.name)))
        self._stepping = {MODEL} | {h.name for h, _ in self.heads}  # drafters paid by their steps, not lookups
        # Drafters not drafting on this machine right now, and why (Stats.switched_off); the decisions new since
        # the last generation ended, each said once (Stats.drafting_notes).
        self.switched_off: dict[str, str] = {}
        self._kinds: dict[str, str] = {}  # label -> the kind of its standing decision
        self._new: dict[str, str] = {}
        self._gates = {False: SourceGate(prose=False), True: SourceGate(prose=True)}
        self.screen = ProseScreen(self.pricing, self.rates)  # prose guesses against the pass curve
        self._quiet: dict[str, int] = {}  # drafter -> proposals it sits out on its last price before pricing again
        self._now = self._gates[False]  # the gate of the latest proposal

    # -- acceptance bookkeeping --------------------------------------------------------------------------------
    def rate(self, key: str, bucket: int) -> float:
        return self.rates(key, bucket)

    def observe(self, draft: Draft, n_accepted: int) -> None:
        saved = self._now.saved
        for key in self._keys[:n_accepted]:
            if key is not None:
                self._now.count(saved, base(key[0]))
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
        for gate in self._gates.values():  # the next generation is new text (policy/gate.py)
            gate.new_text()
        self.screen.new_text()
        model_labels = {MODEL} | {g.label(MODEL) for g in self._gates.values()}
        for label in [k for k, kind in self._kinds.items() if kind == "gate" and k not in model_labels]:
            self._on(label)

    # -- what is said about it -------------------------------------------------------------------------------
    def _off(self, label: str, kind: str, why: str) -> None:
        """A drafter is off for now, for `why`; said again only when the kind of reason changes."""
        self.switched_off[label] = why
        if self._kinds.get(label) != kind:
            self._kinds[label] = kind
            self._new[label] = why

    def _on(self, label: str) -> None:
        self.switched_off.pop(label, None)
        self._kinds.pop(label, None)
        self._new.pop(label, None)

    def rest(self, label: str, why: str) -> None:
        """A drafter that cannot draft at all here (a head the llama.cpp build cannot run), said once."""
        self._off(label, "build", why)

    def take_notes(self) -> dict[str, str]:
        """The decisions made since the last call (the engine asks at the end of each generation)."""
        new, self._new = self._new, {}
        return new

    # -- costs -----------------------------------------------------------------------------------------------
    def _close_window(self, gate: SourceGate) -> None:
        """At the end of each window, rest the sources (and the draft model) whose drafting cost more than their
        accepted tokens saved (policy/gate.py). A source keeps its note in `switched_off` until it has run again
        and paid."""
        step = self.pricing.step_s()
        verdicts = gate.tick(step, self.pricing.row_s())
        if verdicts is None:
            return
        for v in verdicts:
            label = gate.label(v.key)
            if v.rest:
                self._off(label, "gate", self._gate_note(v))
            elif self._kinds.get(label) == "gate":
                self._on(label)
        log.debug("gate window %s: %d proposals, step_ms=%.3f, resting=%s | %s", "prose" if gate.prose else "grammar",
                  gate.window, 1000 * step,
                  sorted(k for k, n in gate.rest.items() if n > 0) or "-",
                  "; ".join(f"{v.key} rows={v.drafted} accepted={v.accepted} spent_ms={1000 * v.spent_s:.3f} "
                            f"saved_ms={1000 * v.saved_s:.3f} {'off for %d' % v.rest if v.rest else 'on'}"
                            for v in verdicts) or "no source asked")

    def _gate_note(self, v: Verdict) -> str:
        what = "its steps" if v.key in self._stepping else "its lookups"
        if not v.drafted:
            return f"{what} cost {1000 * v.spent_s:.1f} ms over the last steps and drafted nothing: off for {v.rest} steps"
        return (f"{what} and rows cost {1000 * v.spent_s:.1f} ms over the last steps, and {v.accepted} of its "
                f"{v.drafted} drafted tokens were accepted, saving {1000 * v.saved_s:.1f} ms: off for {v.rest} steps")

    # -- drafting --------------------------------------------------------------------------------------------
    def propose(self, req: DraftRequest) -> Draft:
        draft = Draft()
        self._keys = []
        # Seeded sampling must replay exactly: drafting then depends on nothing measured or learned, since the
        # accept/resample draws (and so the output) follow the drafts.
        self.rates.fixed = not req.sampling.greedy and req.sampling.seed is not None
        cons = req.constraint
        self._now = self._gates[cons is None]
        self.screen.judge(req.history)
        if not self.rates.fixed:
            self._close_window(self._now)
        probs, tail = self._assemble(req, draft)
        keep = self.pricing.cut(probs, draft.forced)
        if tail:
            # Forced tokens that end the grammar need no verify pass once they are all that is left (the engine
            # emits them as they are), so after a guess they would only cost rows.
            keep = min(keep, tail)
        draft.truncate(keep)
        del self._keys[keep:]
        for key in self._keys:
            if key is not None:
                self._now.count(self._now.drafted, base(key[0]))
        if cons is not None and self.schema and keep:
            draft.next_forced = self._forced_after(cons, draft.tokens)
        return draft

    def _assemble(self, req: DraftRequest, draft: Draft) -> tuple[list[float], int | None]:
        """Fill `draft` generously: forced tokens, then the best candidate where the grammar leaves a choice, until
        the budget is spent or nothing is likely enough. Returns the probability that verification reaches each
        token, and where forced tokens that complete the grammar begin (None if they do not)."""
        budget = min(req.max_len, self.max_len)
        reach = 1.0  # probability that verification gets this far
        thr = FLOOR  # candidates are drafted generously, then cut where the expected gain peaks
        probs: list[float] = []  # reach after each drafted token
        tail = None
        consumed = 0
        cons = req.constraint
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
                best = self._choose(req, context + draft.tokens, room, reach, thr, ends_value, draft)
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
        return probs, tail

    def _choose(self, req: DraftRequest, context: list[int], room: int, reach: float, thr: float,
                ends_value: bool, draft: Draft) -> Priced | None:
        """The candidate to draft next where the grammar leaves a choice (or in free text)."""
        cons = req.constraint
        best = None
        if ends_value and cons is not None and self.closers:
            best = self._closer(cons, room, reach, thr)
        if best is None:
            # Forced text, unless a source agrees with it and goes further (a repeated call, a loop).
            fb = self._forced_bytes(cons, room, reach, thr) if cons is not None and self.schema else None
            forced, forced_value = fb or (None, -1.0)
            best = self._best_candidate(context, room, cons, reach, thr, forced, forced_value, len(draft))
        if best is None and cons is not None and self.closers and draft.origins[-1:] != ["schema"]:
            best = self._closer(cons, room, reach, thr)
        for head, price in self.heads if best is None else ():
            # A head, like the draft model, only where no source has a guess (below); before the model: it reads
            # the target's own hidden states and costs a layer, not a model. Once per proposal, as llama.cpp's (its
            # draft_max tokens): asked again it would read its own draft once more.
            if head.name in draft.origins:
                continue
            best = self._learned_candidate(head, price, 0.0, req, context, room, cons, reach)
            if best is not None:
                break
        if best is None and self.model is not None:
            # Only where no source has a guess: asking the model beside a weak candidate (tried, issue 26) paid its
            # whole draft for each proposal the candidate then won; on the H200 profile that took Gemma's workspace
            # suite from 4.99x to 1.94x projected at 4% more tokens a pass.
            best = self._learned_candidate(self.model, self.model_price, self.model_cost_ratio, req, context, room,
                                           cons, reach)
        return best

    @staticmethod
    def _forced_after(cons: Constraint, tokens: list[int]) -> int | None:
        """The token the grammar forces after `tokens`, if any (the state is left as it was)."""
        n = cons.consume_valid_prefix(tokens)
        try:
            ff = cons.forced() if n == len(tokens) and not cons.done() else []
        finally:
            cons.rollback(n)
        return ff[0] if ff else None

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

    def _best_candidate(self, context, room, cons: Constraint | None, reach, thr, best=None, best_value=-1.0,
                        rows_before: int = 0):
        """The sources' candidate with the highest score (`best`, scored `best_value`, unless one beats it).
        Where `best` is forced text, a source's tokens that spell it are tracked as forced text, not as its guess.
        In prose a guess whose rows would cost the pass more than it is likely to save is no guess (Pricing.
        guesses_pay): the draft model is asked instead (policy/prose_screen.py)."""
        share = self.pricing.row_share()
        screen = cons is None and not self.rates.fixed
        forced = best.toks if best is not None and best.key == "bytes" else []
        gate = self._now
        for src in self.sources:
            key = src.rate_key  # acceptance is tracked per source, even under a shared name
            if gate.resting(key) or (cons is None and src.grammar_only) or (src.remembers and self.rates.fixed):
                continue
            t0 = time.perf_counter()
            found: Candidate | None = src.candidate(context, room, cons)
            gate.spend(key, time.perf_counter() - t0)
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
            if screen and not self._pays(cand, reach, rows_before):  # prose: worth its rows?
                continue
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

    def _pays(self, cand: Priced, reach: float, rows_before: int) -> bool:
        """The prose screen's verdict on a candidate (policy/prose_screen.py)."""
        probs, p = [], reach
        for i in range(len(cand.toks)):
            p *= cand.rate(i)
            probs.append(p)
        return self.screen.pays(cand.toks, probs, [cand.bucket(i) for i in range(len(cand.toks))], rows_before)

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
        n, value = self._take(cand, reach, thr, self.pricing.row_share())
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

    def _learned_candidate(self, drafter: ModelDrafter | HeadDrafter, price: ModelPrice, cost_ratio: float,
                           req: DraftRequest, context: list[int], room: int, cons: Constraint | None,
                           reach: float) -> Priced | None:
        """The draft model's (or a head's) tokens, where asking it pays (policy/model_price.py says what it costs);
        its acceptance is learned under its name."""
        key = drafter.name
        if self._quiet.get(key, 0) > 0 and not self.rates.fixed and price.sit_out_quietly():
            self._quiet[key] -= 1  # priced out a moment ago (_asked): the same prices decide the same
            return None
        rates = self.rates.of_candidate(key, START)
        if self.rates.fixed:  # seeded sampling: the priors and fixed proportions decide, nothing measured
            thr = self.pricing.threshold()
            if reach * rates[0] < thr:
                return None
        else:
            thr = self.pricing.threshold(self._token_s(price, cost_ratio))
            priced = self._asked(drafter, price, cost_ratio, req, context, room, reach, rates, thr)
            if priced is None:
                return None
            rates = priced
        # Only the tokens that can be kept are drafted: _take cuts a candidate where its reach falls below `thr`, by
        # rates that do not depend on the tokens, so the steps beyond would be paid and thrown away (SmolLM2's
        # Q4_1 draft made 7 steps a call, 17 in a 128-token reply, for the 1-2 tokens the cut kept).
        worth, _ = self._take(Priced(key, [0] * min(room, drafter.max_len), key, rates, START), reach, thr)
        if worth == 0:
            return None
        sub = DraftRequest(context, worth, req.sampling, cons, req.rng)
        d = drafter.propose(sub)
        price.observe(drafter.last_call)
        self._now.spend(key, drafter.last_call.steady_s)
        cand = Priced(key, d.tokens, key, rates, START)
        n, _ = self._take(cand, reach, thr)
        if n == 0:
            return None
        cand.toks = d.tokens[:n]
        return cand

    def _token_s(self, price: ModelPrice, cost_ratio: float) -> float:
        return price.token_s(cost_ratio * self.pricing.step_s())

    def _asked(self, drafter: ModelDrafter | HeadDrafter, price: ModelPrice, cost_ratio: float, req: DraftRequest,
               context: list[int], room: int, reach: float, rates: list[float], thr: float) -> list[float] | None:
        """Whether the draft model (or a head) drafts now: it is not resting (the gate), its first token's
        acceptance beats what a drafted token costs, and tokens it missed are worth catching up. While out it costs
        nothing but, now and then, one step to be priced again (a draft model), or, where a likelier acceptance
        than it has shown would pay, a try whose tokens are judged (a head, or a price a profile fixed). Returns
        the acceptance its tokens are priced at (its own; PLAUSIBLE for a try: at its own the cut would drop them,
        and a try never verified learns nothing), or None where it does not draft."""
        label = drafter.name
        token_s, step = self._token_s(price, cost_ratio), self.pricing.step_s()
        # A head has no step of its own to time apart from drafting: it is priced again when it is tried.
        probe = getattr(drafter, "probe", None) if price.can_reprice else None
        if self._now.resting(label):
            pass  # the gate's note stands
        elif rates[0] < thr:
            measured = (label, START) in self.rates.learned
            why = ("its tokens cost {:.1f} ms against a {:.1f} ms target step, so at least {:.0%} of them must be "
                   "accepted to pay, and {} {:.0%}: not drafting (priced again now and then; --no-draft does not "
                   "load it)").format(1000 * token_s, 1000 * step, thr, "it gets" if measured else "expected",
                                      rates[0])
            self._off(label, "price", why)
            self._quiet[label] = QUIET_FOR
            if price.probe_due():
                self._quiet[label] = 0  # priced anew (a probe, or a try): the next proposal reads the new price
                if probe is not None:
                    # A draft model is priced again by one step, never tried: a try catches up the context, and on
                    # this CPU SmolLM2's Q4_1 draft, once its tries were verified, spent 0.28-0.81 s of a 2.5-3 s
                    # reply on them (the batch after sitting out costs twice its timed price, its caches cold).
                    probe()
                elif reach == 1.0 and thr <= PLAUSIBLE and self._catch_up_pays(drafter, price, req, context, room,
                                                                               [PLAUSIBLE], token_s, step) is None:
                    # A head (or a profile's fixed price) has no step to time: a try, verified like any draft,
                    # so its acceptance is learned.
                    return [PLAUSIBLE] * len(rates)
            return None
        elif reach * rates[0] < thr:
            return None  # too far into this draft for its guess to pay: nothing to say about the drafter
        else:
            not_yet = self._catch_up_pays(drafter, price, req, context, room, rates, token_s, step)
            if not_yet is None:
                if self._kinds.get(label) in ("price", "catch-up"):
                    self._on(label)
                price.paid()
                return rates
            self._off(label, "catch-up", not_yet)
        if price.probe_due() and probe is not None:
            probe()
        return None

    def _catch_up_pays(self, drafter: ModelDrafter | HeadDrafter, price: ModelPrice, req: DraftRequest,
                       context: list[int], room: int, rates: list[float], token_s: float, step: float) -> str | None:
        """None when the tokens the drafter missed are worth catching up at acceptance `rates`, else why not."""
        behind = drafter.behind(context)
        gain, per = proposal_gain(rates, step, token_s, self.pricing.row_s(), min(room, drafter.max_len))
        catch_up = price.catch_up_s(behind)
        if worth_catching_up(behind, catch_up, gain, per, req.remaining):
            return None
        return (f"it would pay, but catching up the {behind} tokens it missed would cost {1000 * catch_up:.0f} ms, "
                "more than it can win back in this reply: not drafting")
