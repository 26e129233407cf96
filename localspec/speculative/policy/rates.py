"""What the hybrid policy believes about each source's drafts: acceptance priors, how observations move them, and
the buckets they are kept in. The numbers the policy keeps being tuned on live here, named.

A rate is kept per (key, bucket). The key is a source's rate key (Candidate.key: "ngram", "copy:old", ...), with
PROSE appended outside a grammar; the bucket says which token of a candidate it is about:

    START       the candidate's first token: a guess at a choice point (which tool, which value)
    START - 1   ... the same from a weak match (CandidateDrafter.bucket), half as sure until measured
    1..DEPTHS   the tokens that continue it, by depth (DEPTHS and beyond share one rate): once the start of a copied
                span is right the rest usually is too, which one rate for every token would miss
    LINE        a token where a copy may stop (Candidate.breaks: a line start, where an edit's `old` ends)
"""

from __future__ import annotations

from typing import Iterable

START = -1
DEPTHS = 4
LINE = DEPTHS + 1

# Prior acceptance of a candidate's first token, before anything is observed, per source key.
PRIOR_FIRST = {"history": 0.75, "ngram": 0.5, "text": 0.5, "span": 0.7, "model": 0.7, "schema": 0.5, "bytes": 0.9,
               "close-next": 0.6, "close-end": 0.4, "tool": 0.8, "copy": 0.6,
               "recall": 0.7,
               # Draft heads: what their makers report for the first token (MTP about 0.8 at 2 tokens, llama.cpp's
               # Qwen3.6 figures; EAGLE-3 and DFlash acceptance lengths of 3-5 imply 0.7 and more).
               "mtp": 0.8, "eagle3": 0.7, "dflash": 0.7}
UNKNOWN_PRIOR = 0.5  # a source not in the table
WEAK_MATCH_FACTOR = 0.5  # a weak match's first token: this share of the source's prior
# ... and of the tokens after a candidate's first one, which are usually right if it was.
PRIOR_DEPTH = 0.85
# A copy found by a long match (a file's lines copied into a call) goes on being right far longer: its long drafts
# start near this and are then priced by what is observed at each depth.
# So does an earlier generation found again from its prompt's tail (a repeated or regenerated request).
PRIOR_DEPTH_BY = {"copy": 0.95, "recall": 0.95}
PRIOR_LINE = 0.85

# Outside a grammar (prose) the same lookups are guesses at free text: a repeated phrase goes on far less often than
# a value copied into a call. Acceptance there is learned apart (keys get PROSE appended) from these priors, so that
# no row is spent on a guess before prose has shown it repeats (the cut needs p > c1 / (c0 + c1), 0.25-0.35 on this
# CPU); a long copy (a file quoted in a reply) keeps its own prior.
PROSE = ":prose"
PRIOR_FIRST_PROSE = {"ngram": 0.3, "text": 0.2, "span": 0.2, "history": 0.4, "tool": 0.2, "copy": 0.6, "recall": 0.6}
PRIOR_DEPTH_PROSE = 0.7

EMA = 0.15  # weight of one verdict in a rate
DRIFT = 0.01  # per verify pass, every rate moves this share of the way back to its prior
# Below this probability of being reached a drafted token cannot pay for its row (candidates are drafted generously
# down to here, then cut where the expected gain peaks).
FLOOR = 0.02
THRESHOLD_UNMEASURED = 0.15  # the least probability for one more row to pay, before any cost is measured


def depth(i: int) -> int:
    """The bucket of a candidate's i-th continuing token (i >= 1)."""
    return min(i, DEPTHS)


def base(key: str) -> str:
    """A rate key without its suffixes (PROSE, a Candidate's refinement such as ":old"): the source it belongs to."""
    return key.split(":", 1)[0]


def prior(key: str, bucket: int) -> float:
    prose = key.endswith(PROSE)
    name = base(key)
    if bucket == LINE:
        return PRIOR_LINE
    first = (PRIOR_FIRST_PROSE if prose else PRIOR_FIRST).get(name, PRIOR_FIRST.get(name, UNKNOWN_PRIOR))
    if bucket < START:
        return WEAK_MATCH_FACTOR * first
    if bucket < 1 or name == "model":  # the draft model's every token is a fresh guess
        return first
    return PRIOR_DEPTH_BY.get(name, PRIOR_DEPTH_PROSE if prose else PRIOR_DEPTH)


class AcceptanceRates:
    """Learned acceptance per (key, bucket), each starting at its prior. `fixed` (seeded sampling, which must replay
    exactly) makes every rate its prior: drafting then depends on nothing learned."""

    def __init__(self) -> None:
        self.learned: dict[tuple[str, int], float] = {}
        self.fixed = False

    def __call__(self, key: str, bucket: int) -> float:
        if self.fixed:
            return prior(key, bucket)
        return self.learned.get((key, bucket), prior(key, bucket))

    def of_candidate(self, key: str, start: int) -> list[float]:
        """A candidate's rates: [first token (bucket `start`), depth 1, ..., depth DEPTHS+, at a break (LINE)]."""
        return [self(key, start)] + [self(key, d) for d in range(1, LINE + 1)]

    def learn(self, judged: Iterable[tuple[str, int] | None], n_accepted: int, drift: bool = True) -> None:
        """One verify pass: every rate drifts back towards its prior (a source that fell below the cut is no longer
        drafted, so no longer observed, and would stay shut out where it has become right: a model looping on its
        own text), then the buckets of the judged tokens (the accepted ones and the first rejected one) move.
        `drift=False`: tokens judged besides a pass (a guess judged in the shadow), no pass to drift by."""
        for key, old in self.learned.items() if drift else ():
            self.learned[key] = old + DRIFT * (prior(*key) - old)
        for i, bucket in enumerate(judged):
            if i > n_accepted:
                break
            if bucket is None:
                continue
            old = self.learned.get(bucket, prior(*bucket))
            self.learned[bucket] = (1 - EMA) * old + EMA * (1.0 if i < n_accepted else 0.0)

    def clear(self) -> None:
        self.learned.clear()
