"""Read Prometheus text format (the counters vLLM and `localspec serve` expose at /metrics)."""

from __future__ import annotations

import re

_LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_prometheus(text: str) -> dict[tuple[str, tuple], float]:
    """{(metric name, sorted label pairs): value} for every sample line."""
    out: dict[tuple[str, tuple], float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        if not m:
            continue
        try:
            value = float(m.group(3))
        except ValueError:
            continue
        labels = tuple(sorted(_LABEL.findall(m.group(2) or "")))
        out[(m.group(1), labels)] = value
    return out


def total(samples: dict, name: str, **match) -> float | None:
    """Sum of a metric over all label sets (filtered by `match`); None if the metric is absent."""
    found = [v for (n, labels), v in samples.items()
             if n == name and all(dict(labels).get(k) == want for k, want in match.items())]
    return sum(found) if found else None


def by_label(samples: dict, name: str, label: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for (n, labels), v in samples.items():
        key = dict(labels).get(label)
        if n == name and key is not None:
            out[key] = out.get(key, 0.0) + v
    return out
