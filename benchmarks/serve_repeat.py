#!/usr/bin/env python3
"""The same chat request sent twice to a server: how much faster is the repeat? `localspec serve` against
llama-server (`--spec-type ngram-mod`, which keeps an n-gram table across requests), one server at a time.

    python benchmarks/serve_repeat.py --target smollm2-135m-instruct-f16.gguf [--llama-server PATH] [--reps 3]

Each server is started fresh (an empty memory: a first request is a first request), answers REQUEST twice (greedy,
256 tokens, no tools), and is stopped; that is repeated `--reps` times and the medians printed. Speed is
completion tokens over the request's wall time (prompt included, the same for both servers; the prompt is short).
localspec runs with its default drafting (`config.toml`'s drafters) and a fresh LOCALSPEC_HOME (no generations of
earlier runs), and with `--no-draft` as the target-only reference.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REQUEST = {"messages": [{"role": "user", "content": "Explain how a hash map works, with a short example in Python."}],
           "max_tokens": 256, "temperature": 0}


def _post(url: str, body: dict) -> tuple[dict, float]:
    req = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=600) as resp:
        out = json.loads(resp.read())
    return out, time.perf_counter() - t0


def _wait(url: str, proc: subprocess.Popen, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url + "/v1/models", timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError("server did not start")


def run_server(cmd: list[str], port: int, env: dict | None = None) -> list[dict]:
    """Start a server, send REQUEST twice, stop it: [{tok_s, tokens, text}] per request."""
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait(url, proc)
        out = []
        for _ in range(2):
            resp, wall = _post(url, dict(REQUEST, model="m"))
            n = resp["usage"]["completion_tokens"]
            row = {"tok_s": n / wall, "tokens": n, "text": resp["choices"][0]["message"]["content"]}
            if "timings" in resp:  # llama-server's own account of its decoding
                row["server_tok_s"] = resp["timings"].get("predicted_per_second")
            out.append(row)
        return out
    finally:
        proc.terminate()
        proc.wait(30)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--target", required=True)
    p.add_argument("--llama-server")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--port", type=int, default=8642)
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)

    servers = {}
    if a.llama_server:
        servers["llama-server ngram-mod"] = lambda home: ([a.llama_server, "-m", a.target, "--port", str(a.port),
                                                          "-t", str(a.threads), "-c", "4096", "--spec-type",
                                                          "ngram-mod", "-np", "1", "--temp", "0"], None)
        servers["llama-server"] = lambda home: ([a.llama_server, "-m", a.target, "--port", str(a.port),
                                                "-t", str(a.threads), "-c", "4096", "-np", "1", "--temp", "0"], None)
    base = [sys.executable, "-m", "localspec", "serve", "--target", a.target, "--port", str(a.port),
            "--threads", str(a.threads), "--ctx-size", "4096"]
    servers["localspec serve"] = lambda home: (base, dict(os.environ, LOCALSPEC_HOME=home, PYTHONPATH=str(ROOT)))
    servers["localspec serve --no-draft"] = lambda home: (base + ["--no-draft"],
                                                          dict(os.environ, LOCALSPEC_HOME=home, PYTHONPATH=str(ROOT)))
    runs: dict[str, list[list[dict]]] = {k: [] for k in servers}
    for _ in range(a.reps):  # taking turns, so a drift of the machine shifts every server alike
        for name, make in servers.items():
            with tempfile.TemporaryDirectory() as home:
                cmd, env = make(home)
                runs[name].append(run_server(cmd, a.port, env))
    out = {}
    for name, reps in runs.items():
        out[name] = {"first_tok_s": round(statistics.median(r[0]["tok_s"] for r in reps), 1),
                     "repeat_tok_s": round(statistics.median(r[1]["tok_s"] for r in reps), 1),
                     "tokens": [r[0]["tokens"] for r in reps],
                     "repeat_identical": all(r[0]["text"] == r[1]["text"] for r in reps)}
        if "server_tok_s" in reps[0][0]:
            out[name]["server_first_tok_s"] = round(statistics.median(r[0]["server_tok_s"] for r in reps), 1)
            out[name]["server_repeat_tok_s"] = round(statistics.median(r[1]["server_tok_s"] for r in reps), 1)
    if a.json:
        print(json.dumps(out))
        return 0
    print(f"{Path(a.target).name}: the same request twice, {REQUEST['max_tokens']} tokens, greedy, "
          f"{a.threads} threads, median of {a.reps}")
    for name, v in out.items():
        extra = (f"  (its own timings: {v['server_first_tok_s']} -> {v['server_repeat_tok_s']})"
                 if "server_first_tok_s" in v else "")
        print(f"  {name:28} first {v['first_tok_s']:7.1f} tok/s   repeat {v['repeat_tok_s']:7.1f} tok/s   "
              f"x{v['repeat_tok_s'] / v['first_tok_s']:.2f}{extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
