"""localspec's port of llama.cpp's heads against llama.cpp itself: `llama-speculative-simple` (built from the same
vendored source by scripts/llama_server.py --tool llama-speculative-simple) and localspec's head drivers run on the
same tiny files and prompt, greedy, with the same draft length and no p_min; every draft must hold the same tokens
and have the same number accepted, step by step, and the totals (llama.cpp's n_drafted / n_accept) must agree.

How the two loops are lined up: llama.cpp's example decodes the prompt but its last token, then drafts after that
token; localspec decodes the whole prompt and drafts after the target's first token. So llama.cpp gets localspec's
prompt followed by the first token localspec generated (the test checks the text tokenizes back to exactly that),
and from there both draft at the same positions from the same state.

The binary comes from LOCALSPEC_SPEC_SIMPLE (CI builds it: .ci/run); without that variable these tests are skipped,
with it and no binary there they fail.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from localspec.runtime.context import ContextSettings
from localspec.runtime.pair import load_pair
from localspec.speculative.decoder import GenParams, SpecEngine
from localspec.speculative.heads.build import head_drafter

pytestmark = pytest.mark.slow  # llama.cpp's program in a subprocess

BINARY = os.environ.get("LOCALSPEC_SPEC_SIMPLE")
PROMPT = "read the file name and write the test data to the file, then list the directory"
N_PREDICT = 40
CANDIDATE = re.compile(r"draft candidate\s+0, pos\s+(\d+):\s+(\d+)")
ACCEPTED = re.compile(r"accepted (\d+)/(\d+) draft tokens")
TOTALS = re.compile(r"n_(drafted|accept)\s+=\s+(\d+)")


def spec_simple() -> Path:
    if not BINARY:
        pytest.skip("LOCALSPEC_SPEC_SIMPLE is not set (python scripts/llama_server.py --tool llama-speculative-simple)")
    path = Path(BINARY)
    assert path.is_file(), f"LOCALSPEC_SPEC_SIMPLE={BINARY} is not a file"
    return path


def llama_cpp(target: Path, head: Path | None, spec_type: str, prompt: str, n_max: int, p_min: float) -> dict:
    """Run llama.cpp's reference loop; its drafts (each a list of tokens), accepted counts and totals."""
    cmd = [str(spec_simple()), "-m", str(target), *(["-md", str(head)] if head else []), "--spec-type", spec_type,
           "-p", prompt, "-n", str(N_PREDICT - 1), "--temp", "0", "--top-k", "1", "--spec-draft-n-max", str(n_max),
           "--spec-draft-p-min", str(p_min), "-c", "512", "-b", "512", "-ub", "512", "-t", "1", "-v", "--seed", "0"]  # -v: the debug lines
    # llama.cpp's logger writes from a thread it never joins: now and then a run's last lines are lost at exit
    # (common/log.cpp says so), so a run without its closing totals is made again (the loop is deterministic).
    for _ in range(5):
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        log = proc.stdout + proc.stderr
        assert proc.returncode == 0, log[-3000:]
        if "n_accept" in log:
            break
    groups: list[list[int]] = []  # each draft call's best candidates, position by position
    for line in log.splitlines():
        m = CANDIDATE.search(line)
        if m:
            if int(m.group(1)) == 0:
                groups.append([])
            groups[-1].append(int(m.group(2)))
    # Each step's "accepted a/n": n is the draft's length (a candidate under p_min is logged, not drafted). DSpark's
    # confidence cut comes before its logging: a draft cut at its first position logs nothing.
    drafts, accepted, it = [], [], iter(groups)
    for m in ACCEPTED.finditer(log):
        a, n = int(m.group(1)), int(m.group(2))
        drafts.append([] if n == 0 and spec_type == "draft-dspark" else next(it)[:n])
        accepted.append(a)
    totals = {k: int(v) for k, v in TOTALS.findall(log)}
    return {"drafts": drafts, "accepted": accepted, "totals": totals, "log": log}


class Steps(SpecEngine):
    """localspec's loop, noting each draft and how much of it the target kept."""

    def _record(self, draft, accepted, stats):
        self.steps.append((list(draft.tokens), accepted))
        super()._record(draft, accepted, stats)


def localspec(target: Path, head: Path | None, n_max: int, p_min: float
              ) -> tuple[list[int], list[tuple[list[int], int]]]:
    """The head driver alone as the engine's drafter (the port, without the hybrid's pricing and cuts)."""
    pair = load_pair(target, head, ctx=ContextSettings(n_ctx=512, n_batch=512, n_threads=1), heads=True)
    try:
        engine = Steps(pair.target_ctx, head_drafter(pair.head, max_len=n_max, p_min=p_min), calibrate=False)
        engine.steps = []
        prompt = pair.target.tokenize(PROMPT)
        out = engine.generate(prompt, GenParams(max_tokens=N_PREDICT)).tokens
        # llama.cpp's prompt: this one and the first generated token, as text that tokenizes back to exactly that.
        text = PROMPT + pair.target.detokenize(out[:1])
        assert pair.target.tokenize(text) == prompt + out[:1], "the prompt does not round-trip: pick another"
        return out, engine.steps
    finally:
        pair.close()


CASES = {  # case: (target, head file, llama.cpp's --spec-type)
    "mtp": ("qwen35", None, "draft-mtp"),
    "mtp-chained": ("step35", None, "draft-mtp"),
    "mtp-file": ("qwen35_plain", "mtp_only", "draft-mtp"),
    "eagle3": ("llama", "eagle3", "draft-eagle3"),
    "eagle3-hybrid-target": ("qwen35", "eagle3_q35", "draft-eagle3"),
    "dflash": ("llama", "dflash", "draft-dflash"),
    "dspark": ("llama", "dspark", "draft-dspark"),
}


@pytest.mark.parametrize("n_max, p_min", [(1, 0.0), (3, 0.0), (3, 0.5)])
@pytest.mark.parametrize("case", list(CASES))
def test_same_drafts_and_acceptance_as_llama_cpp(head_files, case, n_max, p_min):
    """p_min 0.5: the draft stops where llama.cpp's does (the winner's share of the top 10; DSpark: its confidence
    head)."""
    target_name, head_name, spec_type = CASES[case]
    target = getattr(head_files, target_name)
    head = getattr(head_files, head_name) if head_name else None
    out, steps = localspec(target, head, n_max, p_min)
    ref = llama_cpp(target, head, spec_type, PROMPT + _piece(target, out[0]), n_max, p_min)
    # llama.cpp's prompt holds localspec's first token: it predicts one token fewer, so both have the same room at
    # each step. The very last step may still differ (llama.cpp stops after passing its limit, localspec at it).
    k = min(len(ref["drafts"]), len(steps)) - 1
    assert k >= 8, ref["log"][-2000:]
    ours = [(d, a) for d, a in steps[:k]]
    theirs = list(zip(ref["drafts"][:k], ref["accepted"][:k]))
    assert ours == theirs
    # One line per case with `pytest -s` (benchmarks/README.md quotes them).
    print(f"\n{case:22} n_max {n_max} p_min {p_min}: {k} steps identical, drafted {sum(len(d) for d, _ in ours)}, "
          f"accepted {sum(a for _, a in ours)}; llama.cpp's totals n_drafted {ref['totals']['drafted']}, "
          f"n_accept {ref['totals']['accept']}")
    assert sum(a for _, a in ours) > 0 or case in ("dflash", "dspark") or p_min  # heads that follow the target
    assert ref["totals"]["drafted"] >= sum(len(d) for d, _ in ours)  # its n_drafted: every step it made


def _piece(target: Path, token: int) -> str:
    from localspec.runtime.model import Model, ModelSettings

    model = Model(target, ModelSettings(vocab_only=True))
    try:
        return model.detokenize([token])
    finally:
        model.close()
