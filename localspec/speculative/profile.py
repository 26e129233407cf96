"""Cost profiles: what passes cost on another machine (from llama-bench's figures there), priced like CostModel, and
a run measured here projected onto that machine.

Why: every speed decision in localspec was tuned on a 2-core CPU, where a row of a verify pass costs 15-27% of a
step and a draft model as much as its target; on an H200 a pass of 16 rows costs 1.82 steps and a 0.5B draft step
37% of an 8B one (issue 25). A profile lets the drafting policy price passes as that machine would
(`localspec bench --cost-profile`), and projects what the run would take there: the profile's cost of every verify
pass and every draft-model decode the run made, plus the bookkeeping (everything else) as measured here.

A profile is JSON (FORMAT below); benchmarks/gpu/profile.py makes one from `llama-bench -o jsonl` output with
`profile_from_llama_bench`. Each model's costs: `step_s` (one token, llama-bench `tg`), `pass_s` by row count (a pass
of k rows with one logits row: `pp k`), and `logits_row_s` (each further logits row: `pp k` with `-embd 1`, which
outputs every row, against `pp k`; 0 where not measured).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

from localspec.errors import ConfigError
from localspec.speculative.costs import CostModel, PassCurve
from localspec.speculative.fit import least_squares
from localspec.speculative.stats import Stats

FORMAT = "localspec-cost-profile/1"
_MACHINE_KEYS = ("gpu_info", "cpu_info", "backends", "build_commit")
_RUN_KEYS = ("n_gpu_layers", "n_threads", "flash_attn", "type_k", "type_v", "n_ubatch")


# -- from llama-bench ---------------------------------------------------------------------------------------------

def _call_s(rec: dict) -> float:
    """Seconds of one decode call in steady state: llama-bench's first repetition is a warm-up (on an H200 it took
    three times the others), so the median of the rest; a `tg` sample covers n_gen single-token calls."""
    samples = [float(x) for x in rec.get("samples_ns") or [rec["avg_ns"]]]
    steady = sorted(samples[1:] if len(samples) > 2 else samples)
    mid = len(steady) // 2
    ns = steady[mid] if len(steady) % 2 else (steady[mid - 1] + steady[mid]) / 2
    return ns / 1e9 / (rec["n_gen"] if rec["n_prompt"] == 0 else 1)


def _median(xs: list[float]) -> float:
    xs = sorted(xs)
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2


def model_costs(records: list[dict], name: str) -> dict:
    """One model's costs from llama-bench records; `name` matches `model_filename` (a substring will do, if it
    names one file)."""
    mine = [r for r in records if name in r.get("model_filename", "")]
    files = sorted({r["model_filename"] for r in mine})
    if not files:
        known = sorted({r.get("model_filename", "?") for r in records})
        raise ConfigError(f"no llama-bench record for a model matching {name!r} (models: {', '.join(known)})")
    if len(files) > 1:
        exact = [f for f in files if f == name or Path(f).name == name]
        if len(exact) != 1:
            raise ConfigError(f"{name!r} matches several models: {', '.join(files)}")
        mine = [r for r in mine if r["model_filename"] == exact[0]]
    depth = min(r.get("n_depth", 0) for r in mine)
    mine = [r for r in mine if r.get("n_depth", 0) == depth]
    tg = [_call_s(r) for r in mine if r["n_prompt"] == 0 and r["n_gen"] > 0]
    one: dict[int, list[float]] = {}
    every: dict[int, list[float]] = {}
    for r in mine:
        if r["n_prompt"] > 0 and r["n_gen"] == 0:
            (every if r.get("embeddings") else one).setdefault(r["n_prompt"], []).append(_call_s(r))
    one_s = {k: _median(v) for k, v in sorted(one.items())}
    step = _median(tg) if tg else one_s.get(1)
    if step is None or len(set(one_s) | {1}) < 2:
        raise ConfigError(f"llama-bench records for {files[0]} need a single step (-n) and passes of several row "
                          "counts (-p 1,2,4,...)")
    one_s[1] = step  # a verify pass of one row is a plain decoding step
    every_s = {k: _median(v) for k, v in every.items()}
    extra = [(every_s[k] - one_s[k]) / (k - 1) for k in every_s if k > 1 and k in one_s]
    first = mine[0]
    return {
        "model_filename": first["model_filename"], "model_type": first.get("model_type"),
        "model_size": first.get("model_size"), "model_n_params": first.get("model_n_params"),
        **{k: first.get(k) for k in _RUN_KEYS}, "n_depth": depth,
        "step_s": step,
        "pass_s": {str(k): v for k, v in sorted(one_s.items())},
        "pass_x_step": {str(k): round(v / step, 3) for k, v in sorted(one_s.items())},  # for people reading it
        "logits_row_s": max(_median(extra), 0.0) if extra else 0.0,
        "logits_row_measured": bool(extra),
    }


def read_jsonl(lines: Iterable[str], source: str = "llama-bench output") -> list[dict]:
    out = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{source}, line {n}: not JSON ({exc.msg})") from None
        if not isinstance(rec, dict) or not {"model_filename", "n_prompt", "n_gen"} <= set(rec):
            raise ConfigError(f"{source}, line {n}: not a llama-bench record (run llama-bench with -o jsonl)")
        out.append(rec)
    if not out:
        raise ConfigError(f"{source}: no llama-bench records")
    return out


def profile_from_llama_bench(records: list[dict], target: str, draft: str | None = None) -> dict:
    first = records[0]
    return {
        "format": FORMAT,
        "source": "llama-bench",
        "method": "seconds per decode call: the median of llama-bench's repetitions after the first (a warm-up); "
                  "step_s from tg, pass_s[k] from pp k (one logits row), logits_row_s from pp k with -embd 1 "
                  "(every row's logits) against pp k",
        "machine": {k: first.get(k) for k in _MACHINE_KEYS},
        "target": model_costs(records, target),
        "draft": model_costs(records, draft) if draft else None,
    }


# -- pricing with a profile -------------------------------------------------------------------------------------

def _curve(costs: dict, where: str) -> tuple[float, PassCurve]:
    try:
        step = float(costs["step_s"])
        points = sorted((int(k), float(v)) for k, v in costs["pass_s"].items())
        logits = float(costs.get("logits_row_s") or 0.0)
    except (KeyError, TypeError, ValueError, AttributeError):
        raise ConfigError(f"{where}: needs step_s and pass_s {{rows: seconds}}") from None
    if len(points) < 2 or step <= 0 or any(k < 1 or v < 0 for k, v in points):
        raise ConfigError(f"{where}: pass_s needs two row counts or more, positive seconds")
    return step, PassCurve(tuple(k for k, _ in points), tuple(v for _, v in points), logits)


class CostProfile:
    """Prices passes with another machine's costs, through CostModel's interface, so the drafting policy can use it
    in its place. What this machine measures still goes to `measured` (a CostModel): the run's own statistics
    (target_token_s, the estimated speedup) stay this machine's."""

    def __init__(self, data: dict, *, name: str = "cost profile", measured: CostModel | None = None):
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ConfigError(f"{name}: not a localspec cost profile (format {FORMAT!r}; make one with "
                              "benchmarks/gpu/profile.py)")
        self.data = data
        self.name = name
        self.step_s, self.target = _curve(data.get("target") or {}, f"{name}, target")
        self.draft: PassCurve | None
        self.draft_step, self.draft = (_curve(data["draft"], f"{name}, draft") if data.get("draft") else
                                       (0.0, None))
        # Draft heads priced on that machine (benchmarks/gpu/head_cost.py): per origin ("mtp", "eagle3", "dflash"),
        # the price of one drafted token and each decode's price by rows (catch-ups on the target's rows, steps).
        self.heads: dict[str, tuple[float, PassCurve]] = {}
        for name, costs in (data.get("heads") or {}).items():
            step, curve = _curve(costs, f"{name}, head {name}")
            self.heads[str(name)] = (float(costs.get("token_s") or step), curve)
        self.measured = measured or CostModel()
        c0, c1 = least_squares([(1.0, k) for k in self.target.rows], list(self.target.seconds))
        c2 = self.target.logits_row_s
        self._coef = (max(c0 - c2, 0.0), max(c1, 0.0), c2)

    @classmethod
    def load(cls, path: str | Path) -> CostProfile:
        p = Path(path)
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot read cost profile {p}: {exc.strerror}") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cost profile {p} is not JSON ({exc})") from None
        return cls(data, name=f"cost profile {p}")

    # CostModel's interface, with the profile's prices.
    ready = True

    def coefficients(self) -> tuple[float, float, float]:
        """(per pass, per row, per logits row): the line through the profile's curve (what line-based callers
        use), the logits row's price as measured."""
        return self._coef

    def single_token_s(self) -> float:
        return self.step_s

    def pass_s(self, rows: int, logit_rows: int | None = None) -> float:
        return self.target.pass_s(rows, logit_rows)

    def cost(self, n_tokens: int, n_rows: int | None = None) -> float:
        return self.pass_s(n_tokens, n_rows)

    def marginal_row_s(self, k: int) -> float:
        return self.target.marginal_row_s(k) if k >= 2 else self.step_s

    def pass_curve(self) -> list[tuple[int, float]]:
        return list(zip(self.target.rows, self.target.seconds))

    def draft_step_s(self) -> float:
        """One draft-model token on the profile's machine (0.0: the profile has no draft model)."""
        return self.draft_step

    def draft_pass_s(self, rows: int, logit_rows: int | None = None) -> float:
        if self.draft is None:
            return 0.0
        return self.draft.pass_s(rows, logit_rows)

    def head_step_s(self, name: str) -> float:
        """One token drafted by head `name` on the profile's machine (0.0: the profile does not price it)."""
        return self.heads[name][0] if name in self.heads else 0.0

    def head_pass_s(self, rows: int, logit_rows: int | None = None) -> float | None:
        """A head decode of `rows` rows there (None: the profile prices no head); a profile prices one head."""
        if not self.heads:
            return None
        return next(iter(self.heads.values()))[1].pass_s(rows, logit_rows)

    # What this machine measures is kept apart.
    def observe(self, n_tokens: int, n_rows: int, seconds: float, depth: int | None = None) -> None:
        self.measured.observe(n_tokens, n_rows, seconds, depth)

    def calibrate(self, ctx, *args, **kwargs) -> None:
        self.measured.calibrate(ctx, *args, **kwargs)


# -- projection -----------------------------------------------------------------------------------------------

def projected_s(stats: Stats, profile: CostProfile) -> float:
    """What this run's generation would take on the profile's machine: the profile's price of each verify pass and
    draft-model decode it made, plus the rest of its time (drafting lookups, judging rows, the loop) as measured
    here. Without a draft model in the profile, the draft model's decodes keep their measured time."""
    passes = sum(n * profile.pass_s(rows, logits) for (rows, logits), n in stats.pass_shapes.items())
    if profile.draft is not None:
        drafts = sum(n * profile.draft_pass_s(rows, logits) for (rows, logits), n in stats.draft_shapes.items())
    else:
        drafts = stats.draft_decode_s
    heads = stats.head_decode_s
    if profile.heads and stats.head_shapes:
        heads = sum(n * (profile.head_pass_s(rows, logits) or 0.0) for (rows, logits), n in stats.head_shapes.items())
    bookkeeping = max(stats.generation_s - stats.decode_s - stats.draft_decode_s - stats.head_decode_s, 0.0)
    return passes + drafts + heads + bookkeeping
