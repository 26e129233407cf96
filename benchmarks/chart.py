"""Draw benchmarks/speedups.svg from the results JSON: speedup over target-only per suite and target, one bar per
config, the oracle ceiling (benchmarks/oracle_ceiling.py --json, saved as results/oracle-NAME.json beside the bench
result NAME.json) marked as a line across its group.

    python benchmarks/chart.py [RESULTS_DIR] [-o benchmarks/speedups.svg]

Plain SVG written by hand: no plotting library to install for one chart.
"""

from __future__ import annotations

import argparse
import json
from html import escape
from pathlib import Path

HERE = Path(__file__).parent
COLORS = {"baseline": "#9e9e9e", "model": "#7e57c2", "toolspec": "#1e88e5", "all": "#43a047"}
OTHER = ["#fb8c00", "#00897b", "#d81b60"]
BAR, GAP, GROUP_GAP, HEIGHT, LEFT, TOP, BOTTOM = 18, 3, 26, 260, 110, 40, 120


def load(results: Path) -> list[dict]:
    """One group per bench result file, in name order: its label, speedup per config, and the oracle if run."""
    groups = []
    for path in sorted(results.glob("*.json")):
        if path.name.startswith("oracle-"):
            continue
        data = json.loads(path.read_text(encoding="utf-8"))
        oracle_path = path.with_name(f"oracle-{path.name}")
        oracle = None
        if oracle_path.exists():
            oracle = json.loads(oracle_path.read_text(encoding="utf-8"))["configs"]["oracle"]["speedup"]
        groups.append({"label": path.stem, "cases": data["cases"], "oracle": oracle,
                       "speedups": {k: v["speedup"] for k, v in data["configs"].items()}})
    return groups


def render(groups: list[dict]) -> str:
    configs = list(dict.fromkeys(k for g in groups for k in g["speedups"]))
    color = {c: COLORS.get(c) or OTHER[i % len(OTHER)] for i, c in enumerate(configs)}
    top = max([1.0] + [v for g in groups for v in g["speedups"].values()] + [g["oracle"] or 0 for g in groups])
    top = float(int(top) + 1)
    widths = [len(g["speedups"]) * (BAR + GAP) for g in groups]
    width = LEFT + sum(widths) + GROUP_GAP * len(groups) + 20
    y = lambda v: TOP + HEIGHT * (1 - v / top)  # noqa: E731
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{TOP + HEIGHT + BOTTOM}" '
           'font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{TOP + HEIGHT + BOTTOM}" fill="white"/>',
           '<text x="8" y="16" font-size="13" font-weight="bold">Speedup over target-only (tok/s ratio, '
           'one run per result file); dashed: oracle ceiling</text>']
    for tick in range(int(top) + 1):
        out.append(f'<line x1="{LEFT}" x2="{width - 10}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" '
                   f'stroke="{"#333" if tick == 1 else "#e0e0e0"}"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick}x</text>')
    x = LEFT + GROUP_GAP / 2
    for g, w in zip(groups, widths):
        for i, (name, v) in enumerate(g["speedups"].items()):
            bx = x + i * (BAR + GAP)
            out.append(f'<rect x="{bx:.1f}" y="{y(v):.1f}" width="{BAR}" height="{y(0) - y(v):.1f}" '
                       f'fill="{color[name]}"><title>{escape(g["label"])} {escape(name)}: {v:.2f}x</title></rect>')
            out.append(f'<text x="{bx + BAR / 2:.1f}" y="{y(v) - 3:.1f}" text-anchor="middle" font-size="9">'
                       f'{v:.1f}</text>')
        if g["oracle"]:
            oy = y(g["oracle"])
            out.append(f'<line x1="{x - 4:.1f}" x2="{x + w + 1:.1f}" y1="{oy:.1f}" y2="{oy:.1f}" stroke="#e53935" '
                       f'stroke-width="2" stroke-dasharray="4 2"><title>oracle {g["oracle"]:.2f}x</title></line>')
            out.append(f'<text x="{x + w / 2:.1f}" y="{oy - 3:.1f}" text-anchor="middle" font-size="9" '
                       f'fill="#e53935">{g["oracle"]:.1f}</text>')
        lx, ly = x + w / 2, TOP + HEIGHT + 10
        out.append(f'<text x="{lx:.1f}" y="{ly:.1f}" text-anchor="end" font-size="10" transform="rotate(-35 {lx:.1f} {ly:.1f})">'
                   f'{escape(g["label"])} ({g["cases"]})</text>')
        x += w + GROUP_GAP
    lx = LEFT
    for name in configs:
        out.append(f'<rect x="{lx}" y="24" width="10" height="10" fill="{color[name]}"/>'
                   f'<text x="{lx + 14}" y="33">{escape(name)}</text>')
        lx += 24 + 7 * len(name)
    out.append(f'<line x1="{lx}" x2="{lx + 16}" y1="29" y2="29" stroke="#e53935" stroke-width="2" '
               f'stroke-dasharray="4 2"/><text x="{lx + 20}" y="33">oracle</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results", nargs="?", default=str(HERE / "results"))
    p.add_argument("-o", "--output", default=str(HERE / "speedups.svg"))
    a = p.parse_args()
    groups = load(Path(a.results))
    if not groups:
        raise SystemExit(f"error: no bench result JSON in {a.results}")
    Path(a.output).write_text(render(groups), encoding="utf-8")
    print(f"wrote {a.output} ({len(groups)} groups)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
