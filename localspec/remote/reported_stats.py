"""Speculative statistics as a remote server reports them, in one shape; None when it reports none.

Sources, most precise first: `localspec serve`'s per-response `localspec` field; llama-server's per-response
`timings.draft_n` / `timings.draft_n_accepted`; vLLM's Prometheus `spec_decode` counters, read before and after
the request (a server-wide difference: other clients' traffic in between is counted too, and the result says so).
Nothing is estimated: a missing number stays None.
"""

from __future__ import annotations

from localspec.remote.prom import by_label, total

# Metric families with vLLM's spec_decode names (localspec serve uses the same names under its own prefix).
PROM_PREFIXES = ("vllm:", "localspec:")


def _rate(accepted, drafted) -> float | None:
    return round(accepted / drafted, 4) if drafted else None


def from_localspec(field: dict) -> dict:
    return {"source": "localspec", "drafted": field.get("drafted"), "accepted": field.get("accepted"),
            "acceptance_rate": field.get("acceptance_rate"), "mean_accepted_length": field.get("mean_accepted_length"),
            "drafters": field.get("drafters") or {}, "tokens_per_second": field.get("tokens_per_second"),
            "raw": field}


def from_llama_timings(timings: dict) -> dict | None:
    if not isinstance(timings, dict) or "draft_n" not in timings:
        return None  # llama-server without a draft model reports timings but no draft counts
    drafted, accepted = int(timings.get("draft_n") or 0), int(timings.get("draft_n_accepted") or 0)
    return {"source": "llama-server", "drafted": drafted, "accepted": accepted,
            "acceptance_rate": _rate(accepted, drafted), "mean_accepted_length": None, "drafters": {},
            "tokens_per_second": timings.get("predicted_per_second"), "raw": timings}


def prom_prefix(samples: dict) -> str | None:
    """Which spec_decode family a /metrics page has, if any."""
    for prefix in PROM_PREFIXES:
        if total(samples, f"{prefix}spec_decode_num_draft_tokens_total") is not None:
            return prefix
    return None


def from_prometheus(before: dict, after: dict) -> dict | None:
    prefix = prom_prefix(after)
    if prefix is None:
        return None

    def delta(name):
        a, b = total(after, prefix + name), total(before, prefix + name)
        return None if a is None else a - (b or 0.0)

    drafted = delta("spec_decode_num_draft_tokens_total")
    accepted = delta("spec_decode_num_accepted_tokens_total")
    drafts = delta("spec_decode_num_drafts_total")
    if drafted is None or accepted is None:
        return None
    pos_a = by_label(after, prefix + "spec_decode_num_accepted_tokens_per_pos_total", "position")
    pos_b = by_label(before, prefix + "spec_decode_num_accepted_tokens_per_pos_total", "position")
    per_pos = [int(pos_a[k] - pos_b.get(k, 0.0)) for k in sorted(pos_a, key=int)]
    return {"source": f"{prefix.rstrip(':')} /metrics (server-wide difference)", "drafted": int(drafted),
            "accepted": int(accepted), "acceptance_rate": _rate(accepted, drafted),
            # vLLM's convention: tokens per verification step, the bonus token included.
            "mean_accepted_length": round(1 + accepted / drafts, 4) if drafts else None,
            "drafts": int(drafts) if drafts is not None else None, "accepted_per_position": per_pos,
            "drafters": {}, "tokens_per_second": None}


def summary(stats: dict | None, server: str = "the server") -> str:
    if stats is None:
        return f"speculative statistics unavailable: {server} reports none"
    rate = stats.get("acceptance_rate")
    mal = stats.get("mean_accepted_length")
    # As the local summary words it (speculative/stats.py): a rate of nothing drafted is "–", never 0%.
    shown = "–" if not stats.get("drafted") else None if rate is None else f"{100 * rate:.0f}%"
    parts = [f"accepted {stats['accepted']}/{stats['drafted']} draft tokens" + (f" ({shown})" if shown else "")]
    if mal is not None:
        parts.append(f"{mal:.2f} tokens/pass")
    if stats.get("tokens_per_second"):
        parts.append(f"{stats['tokens_per_second']:.1f} tok/s")
    return ", ".join(parts) + f" [{stats['source']}]"
