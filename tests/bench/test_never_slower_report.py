"""benchmarks/never_slower.py --report: the tables again from a saved run, with each repeat's own ratio (the two
configs of a repeat ran back to back) beside the ratio of the medians."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "never_slower.py"


def _runs(tps: list[float], text: str = "same") -> list[dict]:
    return [{"stats": {"tokens_per_second": t, "drafted": 0, "accepted": 0}, "text": text} for t in tps]


def test_report_prints_the_paired_ratio_beside_the_ratio_of_medians(tmp_path):
    # The host drifts between repeats (60 -> 40 -> 50 target-only): the drafted config runs 4% ahead in two of
    # them, 10% behind in one. The medians' ratio says 0.90x, the repeats' own ratios 1.04x.
    saved = [{"pair": "p", "frontend": "run", "prompt": "a", "config": "no-draft", "runs": _runs([60.0, 40.0, 50.0])},
             {"pair": "p", "frontend": "run", "prompt": "a", "config": "draft", "runs": _runs([62.4, 41.6, 45.0])},
             {"pair": "p", "frontend": "run", "prompt": "b", "config": "no-draft", "runs": _runs([50.0, 50.0, 50.0])},
             {"pair": "p", "frontend": "run", "prompt": "b", "config": "draft",
              "runs": _runs([60.0, 60.0, 50.0], text="other")}]
    path = tmp_path / "run.json"
    path.write_text(json.dumps(saved))
    out = subprocess.run([sys.executable, str(SCRIPT), "--report", str(path)], capture_output=True, text=True,
                         check=True).stdout
    rows = {line.split("|")[3].strip(): [c.strip() for c in line.split("|")[1:-1]]
            for line in out.splitlines() if line.startswith("| p | run |") and line.count("|") == 10}
    assert rows["a"][5:8] == ["0.90x", "1.04x", "0/0"] and rows["a"][8] == "yes"
    assert rows["b"][5:7] == ["1.20x", "1.20x"] and rows["b"][8] == "NO"  # a text that differs is said
    summary = [line for line in out.splitlines() if line.startswith("| p | run |") and line.count("|") == 7]
    assert summary == ["| p | run | 1.05x | 0.90x | 1.12x | 1.04x |"]
