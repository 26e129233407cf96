"""Run a tool-calling suite under several drafting configs, side by side in one process, and score it.

Each case is one turn of the product's own turn engine (localspec/turns/: free text until the model writes the call
trigger, then each call under the tools' schemas, a probe for more), on an engine opened from the product's
configuration (launch/: the user's config.toml and the pair's hints, the defaults `run` and `serve` use). What a
suite needs beyond that is passed as the turn's options: its tool choice, parallel calls where a case expects them,
and bounds for strings and arrays that small models loop in. Generation is greedy (configs compare outputs token
for token).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace

from localspec.bench.scoring import case_correct
from localspec.bench.suite import Case
from localspec.launch.run_config import RunConfig
from localspec.prompting.prompt import chat_prompt_tokens, tool_format
from localspec.runtime.context import Context
from localspec.runtime.pair import LoadedPair
from localspec.speculative import (
    CallHistory,
    CostModel,
    CostProfile,
    GenParams,
    PassPrices,
    SamplingParams,
    build_engine,
    projected_s,
)
from localspec.turns import Bounds, Delta, ToolChoice, TurnEngine, TurnRequest

CONFIGS = {
    "baseline": (),  # target only, even when the pair has a draft model
    "model": ("model",),
    "toolspec": ("schema", "history", "ngram"),
    "all": ("schema", "history", "ngram", "model", "head"),
    "head": ("head",),  # the target's draft head alone (its MTP layers, or an EAGLE-3/DFlash file named as --draft)
}
# Bounds for strings and arrays whose schema has none: a small model caught in a repetition loop still
# finishes a valid call (the same for every config, so outputs stay comparable).
BOUNDS = Bounds(max_string=200, max_items=24)
MAX_CALLS = 8  # parallel cases: BFCL expects 2-8 calls; a model repeating itself stops at 8
SYSTEM = ("You are a function-calling assistant. Answer the user's request by calling the provided tools with "
          "arguments taken from the request.")
TOOL_CHOICES = ("auto", "required")


@dataclass
class CaseResult:
    id: str
    text: str
    calls: list[dict]
    valid_json: bool
    correct: bool
    generated: int
    passes: int
    drafted: int
    accepted: int
    forced: int
    prefill_s: float
    generation_s: float
    latency_s: float
    drafters: dict = field(default_factory=dict)
    phases: dict = field(default_factory=dict)  # passes per turn phase (text, call, probe, ...)
    target_only_s: float | None = None  # what the engine estimates target-only decoding would have taken
    projected_s: float | None = None  # generation time on a cost profile's machine (run_bench's `profile`)
    written: str = ""  # everything the turn wrote, in order: answer text and call text (benchmarks/near_ties.py)

    @property
    def output(self) -> str:
        """What configs compare: the answer text and the calls as parsed."""
        return json.dumps([self.text, self.calls], sort_keys=True)


def case_messages(case: Case) -> list[dict]:
    first = case.messages[0] if case.messages else {}
    return case.messages if first.get("role") == "system" else [{"role": "system", "content": SYSTEM}] + case.messages


def case_prompt(pair: LoadedPair, case: Case) -> list[int]:
    return chat_prompt_tokens(pair.target, case_messages(case), case.tools)


def case_request(case: Case, params: GenParams, tool_choice: str | None = None,
                 bounds: Bounds = BOUNDS) -> TurnRequest:
    """The turn a case asks for: its tool choice (the suite's, else `tool_choice`, else auto), several calls where
    it expects them (BFCL's parallel category), the bench's bounds, and the token limit for the whole turn."""
    choice = ToolChoice.parse(case.tool_choice or tool_choice)
    return TurnRequest(params, tuple(case.tools), choice, parallel=case.category == "parallel",
                       max_calls=MAX_CALLS, call_max_tokens=params.max_tokens, total_tokens=params.max_tokens,
                       bounds=bounds)


class ConfigRun:
    """One config's engine over a suite, run a case at a time so that configs can take turns (see run_bench)."""

    def __init__(self, pair: LoadedPair, config: RunConfig, drafters, *, max_tokens: int = 384,
                 tool_choice: str | None = None, bounds: Bounds = BOUNDS, warm_up: Case | None = None,
                 costs: PassPrices | None = None, profile: CostProfile | None = None):
        self.pair = pair
        self.profile = profile
        # The product's drafting settings (draft_max, draft_p_min from config and hints), with this config's
        # drafters and a call history of its own (what it learns stays within this run).
        drafting = replace(config.drafting, drafters=tuple(drafters))
        self.engine = build_engine(pair, drafting, history=CallHistory(), costs=costs)
        self.turns = TurnEngine(self.engine, pair.target, tool_format(pair.target))
        self.params = replace(config.params, max_tokens=max_tokens, sampling=SamplingParams(temperature=0.0))
        self.tool_choice, self.bounds = tool_choice, bounds
        if warm_up is not None:
            # Warm up and calibrate the cost model outside the measured cases.
            self.engine.generate(case_prompt(pair, warm_up), GenParams(max_tokens=1))
        self._left: list[int] = []  # what this config's last case left in the target cache

    def run(self, case: Case) -> CaseResult:
        ctx = self.pair.target_ctx
        # Keep only what this config's own previous case left in the target cache (the shared prefix), so its
        # prompt is reused exactly as if it ran alone, whichever config ran in between. (Draft-model caches are
        # never shared: see run_bench.)
        ctx.truncate(ctx.common_prefix(self._left))
        t0 = time.perf_counter()
        prompt = case_prompt(self.pair, case)
        written: list[str] = []
        turn = self.turns.run(prompt, case_request(case, self.params, self.tool_choice, self.bounds),
                              emit=lambda ev: written.append(ev.text) if isinstance(ev, Delta) else None)
        latency = time.perf_counter() - t0
        calls = [{"name": name, "arguments": args} for name, args in turn.calls]
        valid = bool(calls) and turn.call_error is None
        s = turn.stats
        self._left = list(ctx.tokens)
        phases: dict[str, int] = {}
        for phase, st in turn.phases:
            phases[phase] = phases.get(phase, 0) + st.target_passes
        return CaseResult(
            id=case.id, text=turn.text, calls=calls, valid_json=valid,
            correct=valid and case_correct(calls, case.ground_truth, case.tools, case.category),
            generated=s.generated_tokens, passes=s.target_passes, drafted=s.drafted, accepted=s.accepted,
            forced=s.forced, prefill_s=s.prefill_s, generation_s=s.generation_s, latency_s=latency,
            drafters={k: [v.drafted, v.accepted] for k, v in s.drafters.items()}, phases=phases,
            written="".join(written), target_only_s=sum_target_only(turn.phases),
            projected_s=projected_s(s, self.profile) if self.profile is not None else None)


def sum_target_only(phases) -> float | None:
    """The engine's estimate of target-only time for a turn's generations (None when one has no data)."""
    total = 0.0
    for _, st in phases:
        t = st.target_only_s
        if t is None:
            return None
        total += t
    return total


def _clear(pair: LoadedPair) -> None:
    pair.target_ctx.clear()
    if pair.draft_ctx is not None:
        pair.draft_ctx.clear()


def run_config(pair: LoadedPair, config: RunConfig, cases: list[Case], drafters, *, max_tokens: int = 384,
               tool_choice: str | None = None, bounds: Bounds = BOUNDS, progress=None) -> list[CaseResult]:
    """One config over the whole suite on its own."""
    _clear(pair)
    run = ConfigRun(pair, config, drafters, max_tokens=max_tokens, tool_choice=tool_choice, bounds=bounds,
                    warm_up=cases[0])
    pair.target_ctx.clear()
    results = []
    for n, case in enumerate(cases, 1):
        results.append(run.run(case))
        if progress:
            progress(n, len(cases), results[-1])
    return results


def summarize(results: list[CaseResult], baseline: list[CaseResult] | None) -> dict:
    gen = sum(r.generated for r in results)
    gen_s = sum(r.generation_s for r in results)
    passes = sum(r.passes for r in results)
    drafted = sum(r.drafted for r in results)
    accepted = sum(r.accepted for r in results)
    n = len(results)
    drafters: dict[str, list[int]] = {}
    phases: dict[str, int] = {}
    for r in results:
        for k, (d, a) in r.drafters.items():
            tot = drafters.setdefault(k, [0, 0])
            tot[0] += d
            tot[1] += a
        for k, p in r.phases.items():
            phases[k] = phases.get(k, 0) + p
    estimates = [r.target_only_s for r in results if r.target_only_s is not None]
    known = len(estimates) == n and gen_s > 0  # every case has its estimate
    out = {
        "tokens_per_second": round(gen / gen_s, 3) if gen_s else 0.0,
        "speedup": None,
        # The engine's own estimate (what the panel shows), to hold against the measured speedup beside it.
        "estimated_speedup": round(sum(estimates) / gen_s, 3) if known else None,
        "mean_accepted_length": round(gen / passes, 3) if passes else 0.0,
        "acceptance_rate": round(accepted / drafted, 4) if drafted else 0.0,
        "forced_share": round(sum(r.forced for r in results) / gen, 4) if gen else 0.0,
        "identical_to_baseline": None,
        "valid_json": round(sum(r.valid_json for r in results) / n, 4),
        "calls_share": round(sum(bool(r.calls) for r in results) / n, 4),
        "ast_accuracy": round(sum(r.correct for r in results) / n, 4),
        "prefill_s": round(sum(r.prefill_s for r in results) / n, 4),
        "latency_s": round(sum(r.latency_s for r in results) / n, 4),
        "generated_tokens": gen,
        "target_passes": passes,
        "passes_by_phase": phases,
        "drafted": drafted,
        "accepted": accepted,
        "drafters": {k: {"drafted": d, "accepted": a, "acceptance_rate": round(a / d, 4) if d else 0.0}
                     for k, (d, a) in drafters.items()},
    }
    if baseline is not None:
        out["identical_to_baseline"] = round(sum(a.output == b.output for a, b in zip(results, baseline)) / n, 4)
    return out


def run_bench(pair: LoadedPair, config: RunConfig, cases: list[Case], configs: list[str], *, max_tokens: int = 384,
              tool_choice: str | None = None, bounds: Bounds = BOUNDS, progress=None,
              profile: CostProfile | None = None) -> dict:
    """Every config over the suite, taking turns case by case: a machine that speeds up or slows down during
    the run (thermal limits, other load) then shifts every config alike instead of skewing the ratios. Each
    config keeps its own engine and call history; the shared prompt prefix stays cached for all of them."""
    order = list(dict.fromkeys((["baseline"] if "baseline" not in configs else []) + configs))
    _clear(pair)
    # Each config that drafts with the model gets a draft cache of its own, kept across its cases as when it
    # runs alone (the draft model's catch-up prefill is part of drafting time, so sharing one would skew it).
    extra: list[Context] = []
    # One cost model for the configs that cut drafts by it (the hybrid's): configs that draft alike then cut
    # alike, instead of each following the noise of its own timings. Not for baseline: its single steps would
    # crowd the batches out of the model's window.
    # With a cost profile, that machine's prices instead (and each config's projected speedup there).
    costs = profile or CostModel()
    runs: dict[str, ConfigRun] = {}
    for name in order:
        view = pair
        if "model" in CONFIGS[name] and pair.draft_ctx is not None:
            if any("model" in CONFIGS[n] for n in runs):
                assert pair.draft is not None  # a draft context comes with its model (load_pair)
                extra.append(Context(pair.draft, pair.draft_ctx.settings))
                view = replace(pair, draft_ctx=extra[-1])
        runs[name] = ConfigRun(view, config, CONFIGS[name], max_tokens=max_tokens, tool_choice=tool_choice,
                               bounds=bounds, warm_up=cases[0],
                               costs=costs if set(CONFIGS[name]) - {"model"} else None, profile=profile)
    pair.target_ctx.clear()
    raw: dict[str, list[CaseResult]] = {name: [] for name in order}
    try:
        for n, case in enumerate(cases, 1):
            for name in order:
                raw[name].append(runs[name].run(case))
                if progress:
                    progress(name, n, len(cases), raw[name][-1])
    finally:
        for c in extra:
            c.close()
    base = raw["baseline"]
    base_tps = summarize(base, None)["tokens_per_second"]
    out: dict = {"cases": len(cases), "configs": {}}
    for name in configs:
        summary = summarize(raw[name], base)
        summary["speedup"] = round(summary["tokens_per_second"] / base_tps, 3) if base_tps else None
        if profile is not None:
            summary["projected_speedup"] = projected_speedup(raw[name], base)
        out["configs"][name] = summary
    out["outputs"] = {name: [{"id": r.id, "text": r.text, "calls": r.calls, "written": r.written,
                              "correct": r.correct} for r in raw[name]] for name in configs}
    return out


def projected_speedup(results: list[CaseResult], baseline: list[CaseResult]) -> float | None:
    """Tokens per second on the profile's machine against target-only decoding there (profile.projected_s)."""
    t, b = _projected_total(results), _projected_total(baseline)
    if not t or not b:
        return None
    return round((sum(r.generated for r in results) / t) / (sum(r.generated for r in baseline) / b), 3)


def _projected_total(results: list[CaseResult]) -> float:
    total = 0.0
    for r in results:
        assert r.projected_s is not None  # run with a profile: ConfigRun projects every case
        total += r.projected_s
    return total


def dumps(result: dict) -> str:
    return json.dumps(result)
