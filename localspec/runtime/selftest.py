"""`localspec doctor`'s self-test: load a tiny model, decode one token and verify a batch, on each device, each in a
child process, and say plainly what failed.

Why a child per device: what goes wrong on a GPU build is often a crash inside llama.cpp (SIGSEGV at model load on
a CUDA machine, issue 25), which would take doctor down with it and say nothing. The child announces each stage on
stdout before starting it, so a crash is reported with the stage it happened in.

Why "verify a batch": speculative decoding trusts that one batched decode gives each row the logits that decoding
its tokens one at a time would; a backend whose batched kernels disagree makes every draft look wrong (or right).
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STAGES = {"start": "starting", "load": "loading the model", "context": "creating a context",
          "decode": "decoding one token", "verify": "verifying a batch"}
TEXT = "read the file name and list the directory then count the files"  # tokens of the tiny model's vocabulary
NEAR_TIE = 1e-3  # rows whose best two logits are closer than this may legitimately flip between kernels


def compare_rows(single: list[list[float]], batch: list[list[float]]) -> tuple[str | None, dict]:
    """Row by row, the argmax of one-at-a-time decoding against the batched decode's: (what disagrees or None,
    figures). Near ties are not judged (F16 kernels may order them either way)."""
    worst, judged = 0.0, 0
    for i, (s, b) in enumerate(zip(single, batch)):
        worst = max(worst, max(abs(x - y) for x, y in zip(s, b)))
        order = sorted(range(len(s)), key=s.__getitem__, reverse=True)
        if s[order[0]] - s[order[1]] < NEAR_TIE:
            continue
        judged += 1
        pick = max(range(len(b)), key=b.__getitem__)
        if pick != order[0]:
            return (f"batch verify disagrees: row {i} of {len(single)}: the batch picks token {pick}, "
                    f"one token at a time picks {order[0]}"), {"rows": len(single), "judged": judged,
                                                             "max_abs_diff": worst}
    return None, {"rows": len(single), "judged": judged, "max_abs_diff": worst}


# -- the child ------------------------------------------------------------------------------------------------

def _stage(name: str) -> None:
    print(f"stage {name}", flush=True)


def child(path: str, device: str) -> int:
    """Run in the child process: each stage announced, then one line `result {json}` (or `error message`)."""
    _stage("start")
    from localspec.errors import LocalspecError
    from localspec.runtime.context import Context, ContextSettings
    from localspec.runtime.model import Model, ModelSettings

    t0 = time.perf_counter()
    try:
        _stage("load")
        settings = ModelSettings(n_gpu_layers=0) if device == "CPU" else ModelSettings(n_gpu_layers=-1, device=device)
        model = Model(path, settings)
        _stage("context")
        ctx = Context(model, ContextSettings(n_ctx=128, n_batch=64, n_threads=1))
        _stage("decode")
        toks = model.tokenize(TEXT)[:32]
        ctx.decode(toks[:1])
        first = ctx.logits(-1).tolist()
        if not all(math.isfinite(x) for x in first):
            print("error decoding one token gave non-finite logits", flush=True)
            return 1
        _stage("verify")
        single = [first]
        for tok in toks[1:]:
            ctx.decode([tok])
            single.append(ctx.logits(-1).tolist())
        ctx.clear()
        ctx.decode(toks, "all")
        batch = [ctx.logits(i).tolist() for i in range(len(toks))]
    except LocalspecError as exc:
        print(f"error {exc}", flush=True)
        return 1
    failure, figures = compare_rows(single, batch)
    result = {"ok": failure is None, "failure": failure, **model.placement, **figures,
              "seconds": round(time.perf_counter() - t0, 3)}
    print("result " + json.dumps(result), flush=True)
    return 0 if failure is None else 1


# -- the parent -----------------------------------------------------------------------------------------------

def _child_command(path: Path, device: str) -> list[str]:
    return [sys.executable, "-X", "faulthandler", "-m", "localspec.runtime.selftest", str(path), device]


def run_one(path: Path, device: str, *, timeout: float = 60.0, command: list[str] | None = None) -> dict:
    """One device's self-test in a child process: {"device", "ok", "failure", "stage", "layers", ...}. `command`
    replaces the child's command line (the tests make children that crash)."""
    out: dict = {"device": device, "n_gpu_layers": 0 if device == "CPU" else -1, "ok": False, "failure": None,
           "stage": None}
    env = dict(os.environ, LOCALSPEC_LLAMA_LOG=os.environ.get("LOCALSPEC_LLAMA_LOG") or "1")
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(command or _child_command(path, device), capture_output=True, text=True,
                              timeout=timeout, env=env)
        stdout, stderr, rc = proc.stdout, proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as exc:
        stdout = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
        stderr, rc = "", None
    stage, error, result = "start", None, None
    for line in stdout.splitlines():
        head, _, rest = line.partition(" ")
        if head == "stage" and rest in STAGES:
            stage = rest
        elif head == "error":
            error = rest
        elif head == "result":
            result = json.loads(rest)
    where = f"while {STAGES[stage]} on {device}"
    if result is not None:
        out.update(result)
        if result.get("failure"):
            out["stage"] = stage
            out["failure"] = f"{result['failure']} on {device}"
    else:
        out["stage"] = stage
        if rc is None:
            out["failure"] = f"the child hung for {timeout:.0f} s {where}"
        elif rc < 0:
            try:
                name = signal.Signals(-rc).name
            except ValueError:
                name = f"signal {-rc}"
            out["failure"] = f"the child crashed with {name} {where}"
        else:
            detail = error or _last_line(stderr) or f"exit status {rc}"
            out["failure"] = f"{detail} ({where})"
    out["ok"] = out["failure"] is None
    out["seconds"] = round(time.perf_counter() - t0, 3)
    return out


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def self_test(devices: list[str], *, model: Path | None = None, timeout: float = 60.0) -> list[dict]:
    """The self-test on each device ("CPU", or a GPU device's name), on `model` or a tiny F32 model written here."""
    with tempfile.TemporaryDirectory(prefix="localspec-selftest-") as tmp:
        if model is None:
            from localspec.runtime.tinymodel import write_tiny_llama

            model = write_tiny_llama(Path(tmp) / "selftest.gguf", n_layer=2)
        return [run_one(model, d, timeout=timeout) for d in devices]


if __name__ == "__main__":
    sys.exit(child(*sys.argv[1:3]))
