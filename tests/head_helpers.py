"""Fixtures for the draft-head tests: tiny random-weight GGUFs written once per session (runtime/tinyheads.py), and a
cost profile under which a head pays (the tiny models' real costs are all alike: on them a head costs as much as
the target it drafts for, so the hybrid would price it out)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from localspec.speculative.profile import FORMAT, CostProfile


@dataclass(frozen=True)
class HeadFiles:
    llama: Path  # tiny llama target (runtime/tinymodel.py), 2 layers
    qwen35: Path  # tiny qwen35 target: 1 DeltaNet layer, 1 attention layer, 1 NextN (MTP) block
    qwen35_plain: Path  # the same without the NextN block
    eagle3: Path  # EAGLE-3 head for `llama`, reading layers 0, 1 and 2 (2: its last hidden state)
    dflash: Path  # DFlash drafter for `llama`, reading layers 0 and 1, block size 4
    eagle3_q35: Path  # EAGLE-3 head for `qwen35`
    dflash_q35: Path  # DFlash drafter for `qwen35`
    mtp_only: Path  # the NextN block of `qwen35` alone, as an mtp-*.gguf beside it
    step35: Path  # tiny step35 target with 2 chained NextN blocks (one per drafted token)
    dspark: Path  # DSpark drafter for `llama`: DFlash with a Markov head and a confidence head, anchor-first blocks


@pytest.fixture(scope="session")
def head_files(tmp_path_factory) -> HeadFiles:
    from localspec.runtime.tinyheads import write_dflash, write_eagle3, write_qwen35, write_step35
    from localspec.runtime.tinymodel import write_tiny_llama

    d = tmp_path_factory.mktemp("heads")
    llama = write_tiny_llama(d / "llama.gguf")
    q35 = write_qwen35(d / "qwen35.gguf")
    return HeadFiles(llama=llama, qwen35=q35, qwen35_plain=write_qwen35(d / "qwen35-plain.gguf", mtp=False),
                     eagle3=write_eagle3(d / "eagle3.gguf", llama), dflash=write_dflash(d / "dflash.gguf", llama),
                     eagle3_q35=write_eagle3(d / "eagle3-q35.gguf", q35),
                     dflash_q35=write_dflash(d / "dflash-q35.gguf", q35, layers=(0, 1)),
                     mtp_only=write_qwen35(d / "mtp-qwen35.gguf", mtp_only=True),
                     step35=write_step35(d / "step35.gguf"),
                     dspark=write_dflash(d / "dspark.gguf", llama, dspark=True))


def head_profile(token_s: float = 0.001, step_s: float = 0.010) -> CostProfile:
    """Another machine's prices (a GPU's proportions): a target step of 10 ms, a row 0.3 ms more, a head token
    1 ms; the hybrid then drafts with a head as it would there, whatever the tiny models cost here."""
    rows = (1, 2, 4, 8, 16, 32, 64)
    curve = {str(k): step_s + 0.0003 * (k - 1) for k in rows}
    head = {"step_s": token_s, "pass_s": {str(k): token_s * (1 + 0.1 * (k - 1)) for k in rows}}
    return CostProfile({"format": FORMAT, "target": {"step_s": step_s, "pass_s": curve}, "draft": None,
                        "heads": {name: head for name in ("mtp", "eagle3", "dflash")}}, name="head test profile")
