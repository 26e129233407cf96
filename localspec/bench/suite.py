"""Benchmark suites: JSONL lines in the format of benchmarks/bfcl_subset.jsonl."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from localspec.errors import ConfigError


@dataclass
class Case:
    id: str
    category: str
    messages: list[dict]
    tools: list[dict]
    ground_truth: list[dict] = field(default_factory=list)
    session: str | None = None
    tool_choice: str | None = None  # "auto" or "required" where the suite says (BFCL cases always expect a call)


def load_suite(path: str | Path, limit: int | None = None) -> list[Case]:
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"suite not found: {p}")
    cases: list[Case] = []
    for no, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            cases.append(Case(id=str(row.get("id", f"line{no}")), category=row.get("category", "simple"),
                              messages=row["messages"], tools=row["tools"],
                              ground_truth=row.get("ground_truth", []), session=row.get("session"),
                              tool_choice=row.get("tool_choice")))
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"{p}:{no}: not a suite line ({exc.__class__.__name__}: {exc})") from None
        if cases[-1].tool_choice not in (None, "auto", "required"):
            raise ConfigError(f"{p}:{no}: tool_choice must be auto or required, not {cases[-1].tool_choice!r}")
        if limit is not None and len(cases) >= limit:
            break
    if not cases:
        raise ConfigError(f"suite {p} has no cases")
    return cases
