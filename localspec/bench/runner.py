"""Run a tool-calling suite under several drafting configs, side by side in one process, and score it."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace

from localspec.bench.scoring import case_correct
from localspec.bench.suite import Case
from localspec.chat.prompt import chat_prompt_tokens, tool_format
from localspec.runtime.context import Context
from localspec.runtime.pair import LoadedPair
from localspec.speculative.builder import build_engine
from localspec.speculative.config import DraftingConfig
from localspec.speculative.costs import CostModel
from localspec.speculative.drafters.history import CallHistory
from localspec.speculative.engine import GenParams
from localspec.speculative.grammar import WRAP_UP, GrammarConstraint, tool_call_grammar
from localspec.speculative.sampling import SamplingParams

CONFIGS = {
    "baseline": (),  # target only, even when the pair has a draft model
    "model": ("model",),
    "toolspec": ("schema", "history", "ngram"),
    "all": ("schema", "history", "ngram", "model"),
}
# Bounds for strings and arrays whose schema has none: a small model caught in a repetition loop still
# finishes a valid call (the same grammar for every config, so outputs stay comparable).
MAX_STRING, MAX_ITEMS = 200, 24
MAX_CALLS = 8  # parallel cases: BFCL expects 2-8 calls; a model repeating itself stops at 8
SYSTEM = ("You are a function-calling assistant. Answer the user's request by calling the provided tools with "
          "arguments taken from the request.")


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


def case_prompt(pair: LoadedPair, case: Case) -> list[int]:
    msgs = case.messages if case.messages and case.messages[0].get("role") == "system" else \
        [{"role": "system", "content": SYSTEM}] + case.messages
    return chat_prompt_tokens(pair.target, msgs, case.tools)


class ConfigRun:
    """One config's engine over a suite, run a case at a time so that configs can take turns (see run_bench)."""

    def __init__(self, pair: LoadedPair, drafters, *, max_tokens: int = 384, draft_max: int = 64,
                 warm_up: Case | None = None, costs: CostModel | None = None):
        self.pair = pair
        self.engine = build_engine(pair, DraftingConfig(drafters=tuple(drafters), draft_max=8, draft_p_min=0.5),
                                   history=CallHistory(), costs=costs)
        self.fmt = tool_format(pair.target)
        self.params = GenParams(max_tokens=max_tokens, sampling=SamplingParams(temperature=0.0),
                                draft_max=draft_max, wrap_up=min(WRAP_UP, max_tokens // 4))
        if warm_up is not None:
            # Warm up and calibrate the cost model outside the measured cases.
            self.engine.generate(case_prompt(pair, warm_up), GenParams(max_tokens=1))
        self._left: list[int] = []  # what this config's last case left in the target cache

    def run(self, case: Case) -> CaseResult:
        pair, fmt = self.pair, self.fmt
        ctx = pair.target_ctx
        # Keep only what this config's own previous case left in the target cache (the shared prefix), so its
        # prompt is reused exactly as if it ran alone, whichever config ran in between. (Draft-model caches are
        # never shared: see run_bench.)
        ctx.truncate(ctx.common_prefix(self._left))
        t0 = time.perf_counter()
        prompt = case_prompt(pair, case)
        # BFCL's categories say whether several calls are wanted (OpenAI's parallel_tool_calls).
        grammar = tool_call_grammar(case.tools, prefix=fmt.call_prefix, suffix=fmt.call_suffix,
                                    parallel=case.category == "parallel", max_string=MAX_STRING, max_items=MAX_ITEMS,
                                    bound_numbers=True, max_calls=MAX_CALLS)
        gen = self.engine.generate(prompt, self.params, constraint=GrammarConstraint(pair.target, grammar, case.tools))
        latency = time.perf_counter() - t0
        parsed = fmt.parse(gen.text)
        calls = [{"name": c.name, "arguments": c.arguments} for c in parsed.calls]
        valid = bool(calls) and not parsed.errors
        s = gen.stats
        self.engine.remember_call(gen.tokens, gen.text, calls[0]["name"] if calls else None)
        self._left = list(ctx.tokens)
        return CaseResult(
            id=case.id, text=gen.text, calls=calls, valid_json=valid,
            correct=valid and case_correct(calls, case.ground_truth, case.tools, case.category),
            generated=s.generated_tokens, passes=s.target_passes, drafted=s.drafted, accepted=s.accepted,
            forced=s.forced, prefill_s=s.prefill_s, generation_s=s.generation_s, latency_s=latency,
            drafters={k: [v.drafted, v.accepted] for k, v in s.drafters.items()})


def _clear(pair: LoadedPair) -> None:
    pair.target_ctx.clear()
    if pair.draft_ctx is not None:
        pair.draft_ctx.clear()


def run_config(pair: LoadedPair, cases: list[Case], drafters, *, max_tokens: int = 384, draft_max: int = 64,
               progress=None) -> list[CaseResult]:
    """One config over the whole suite on its own."""
    _clear(pair)
    run = ConfigRun(pair, drafters, max_tokens=max_tokens, draft_max=draft_max, warm_up=cases[0])
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
    for r in results:
        for k, (d, a) in r.drafters.items():
            tot = drafters.setdefault(k, [0, 0])
            tot[0] += d
            tot[1] += a
    out = {
        "tokens_per_second": round(gen / gen_s, 3) if gen_s else 0.0,
        "speedup": None,
        "mean_accepted_length": round(gen / passes, 3) if passes else 0.0,
        "acceptance_rate": round(accepted / drafted, 4) if drafted else 0.0,
        "forced_share": round(sum(r.forced for r in results) / gen, 4) if gen else 0.0,
        "identical_to_baseline": None,
        "valid_json": round(sum(r.valid_json for r in results) / n, 4),
        "ast_accuracy": round(sum(r.correct for r in results) / n, 4),
        "prefill_s": round(sum(r.prefill_s for r in results) / n, 4),
        "latency_s": round(sum(r.latency_s for r in results) / n, 4),
        "generated_tokens": gen,
        "target_passes": passes,
        "drafted": drafted,
        "accepted": accepted,
        "drafters": {k: {"drafted": d, "accepted": a, "acceptance_rate": round(a / d, 4) if d else 0.0}
                     for k, (d, a) in drafters.items()},
    }
    if baseline is not None:
        out["identical_to_baseline"] = round(sum(a.text == b.text for a, b in zip(results, baseline)) / n, 4)
    return out


def run_bench(pair: LoadedPair, cases: list[Case], configs: list[str], *, max_tokens: int = 384,
              progress=None) -> dict:
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
    costs = CostModel()
    runs = {}
    for name in order:
        view = pair
        if "model" in CONFIGS[name] and pair.draft_ctx is not None:
            if any("model" in CONFIGS[n] for n in runs):
                extra.append(Context(pair.draft, pair.draft_ctx.settings))
                view = replace(pair, draft_ctx=extra[-1])
        runs[name] = ConfigRun(view, CONFIGS[name], max_tokens=max_tokens, warm_up=cases[0],
                               costs=costs if set(CONFIGS[name]) - {"model"} else None)
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
    out = {"cases": len(cases), "configs": {}}
    for name in configs:
        summary = summarize(raw[name], base)
        summary["speedup"] = round(summary["tokens_per_second"] / base_tps, 3) if base_tps else None
        out["configs"][name] = summary
    out["outputs"] = {name: [{"id": r.id, "text": r.text, "correct": r.correct} for r in raw[name]]
                      for name in configs}
    return out


def dumps(result: dict) -> str:
    return json.dumps(result)
