#!/usr/bin/env python3
"""The figures of one benchmarks/gpu/run.sh run, side by side with issue 25's bars (JSON on stdout).

    python benchmarks/gpu/summary.py OUT_FOLDER

Reads what run.sh wrote (any file may be missing: its step was skipped or failed, and its figures are null):
  self-test     doctor.json: each device's self-test and the layers it held
  target_only   run_nodraft.json against llama-bench's tg step: the bar is >= 0.95
  verify        verify_cost.json: localspec's pass of k rows against llama-bench's pp k: the bar is <= 1.15
  draft_price   the draft model's price at load against llama-bench's step: the bar is within 20%
  drafting      run_default.json against run_nodraft.json (the 0.5B draft and the other drafters, default policy)
  suites        bench_*.json: measured speedup and projected_speedup (this GPU's own profile) per config
  oracle        oracle_*.json as written
  heads         heads.json: each draft head's step against its target's (issue 35; head_cost.py)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def _load(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def summary(out: Path) -> dict:
    res: dict = {}
    doctor = _load(out / "doctor.json")
    if doctor:
        res["self_test"] = [{k: t.get(k) for k in ("device", "ok", "failure", "layers")}
                            for t in doctor.get("self_test") or []]
    profile = _load(out / "profile.json")
    step = profile["target"]["step_s"] if profile else None
    if profile:
        res["llama_bench"] = {"target_step_ms": round(1e3 * step, 3),
                              "target_pass_x_step": profile["target"]["pass_x_step"],
                              "draft_step_ms": round(1e3 * profile["draft"]["step_s"], 3) if profile["draft"] else None}
    runs = {n: _load(out / f"run_{n}.json") for n in ("nodraft", "default")}
    stats = {n: (r or {}).get("stats") or {} for n, r in runs.items()}
    tps = {n: s.get("tokens_per_second") for n, s in stats.items()}
    if tps["nodraft"] and step:
        res["target_only"] = {"tokens_per_second": tps["nodraft"], "llama_bench_tg": round(1 / step, 1),
                              "ratio": round(tps["nodraft"] * step, 3), "bar": ">= 0.95"}
    vc = _load(out / "verify_cost.json")
    if vc:
        res["verify"] = {k: {key: r.get(key) for key in ("ratio_last", "ratio_all")}
                         for k, r in vc["target"]["passes"].items()}
        res["verify_bar"] = "<= 1.15"
        if "draft" in vc:
            res["draft_price"] = {"warm_up_ms": round(1e3 * vc["draft"]["warm_up_step_s"], 3),
                                  "ratio": vc["draft"].get("ratio"), "bar": "0.8-1.2"}
    if tps["default"] and tps["nodraft"]:
        d = stats["default"]
        res["drafting"] = {"tokens_per_second": tps["default"], "speedup": round(tps["default"] / tps["nodraft"], 3),
                           "mean_accepted_length": d.get("mean_accepted_length"), "drafters": d.get("drafters"),
                           "switched_off": d.get("switched_off")}
    heads = _load(out / "heads.json")
    if heads:
        res["heads"] = {kind: {"head_step_ms": round(1e3 * m["head"]["step_s"], 3),
                               "token_ms": round(1e3 * m["head"]["token_s"], 3),
                               "target_step_ms": round(1e3 * m["target"]["step_s"], 3), "ratio": m["ratio"]}
                        for kind, m in heads.items()}
    for f in sorted(out.glob("bench_*.json")):
        b = _load(f)
        if b:
            res.setdefault("suites", {})[f.stem[6:]] = {
                name: {k: c.get(k) for k in ("speedup", "projected_speedup", "mean_accepted_length", "tokens_per_second")}
                for name, c in b["configs"].items()}
    for f in sorted(out.glob("oracle_*.json")):
        res.setdefault("oracle", {})[f.stem[7:]] = _load(f)
    return res


if __name__ == "__main__":
    print(json.dumps(summary(Path(sys.argv[1])), indent=1))
