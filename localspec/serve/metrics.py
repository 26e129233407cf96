"""Prometheus counters for /metrics, named after vLLM's (`vllm:spec_decode_*` -> `localspec:spec_decode_*`)
so dashboards and the remote backend read both the same way; request and token counters match llama-server's."""

from __future__ import annotations

import threading
from collections import defaultdict

from localspec.speculative import Stats

P = "localspec:"

# name -> (type, help)
HELP = {
    "requests_total": ("counter", "Chat completion requests answered, by HTTP status."),
    "request_success_total": ("counter", "Finished generations, by finish reason."),
    "requests_rejected_total": ("counter", "Requests refused with 503 because the queue was full."),
    "prompt_tokens_total": ("counter", "Prompt tokens of finished generations."),
    "prompt_tokens_evaluated_total": ("counter", "Prompt tokens evaluated (the rest came from the reused cache)."),
    "generation_tokens_total": ("counter", "Tokens generated."),
    "target_passes_total": ("counter", "Target model forward passes while generating (llama-server n_decode)."),
    "generation_seconds_total": ("counter", "Wall time spent generating, prefill included."),
    "spec_decode_num_drafts_total": ("counter", "Speculative steps that proposed at least one draft token."),
    "spec_decode_num_draft_tokens_total": ("counter", "Draft tokens proposed."),
    "spec_decode_num_accepted_tokens_total": ("counter", "Draft tokens accepted by the target."),
    "spec_decode_num_accepted_tokens_per_pos_total": ("counter", "Accepted draft tokens, by position in the draft."),
    "spec_decode_num_draft_tokens_per_pos_total": ("counter", "Proposed draft tokens, by position in the draft."),
    "spec_decode_num_draft_tokens_by_drafter_total": ("counter", "Draft tokens proposed, by drafter."),
    "spec_decode_num_accepted_tokens_by_drafter_total": ("counter", "Draft tokens accepted, by drafter."),
    "num_requests_running": ("gauge", "Requests generating now (at most 1: one engine)."),
    "num_requests_waiting": ("gauge", "Requests waiting in the queue."),
}
LABELLED = {"requests_total", "request_success_total", "spec_decode_num_accepted_tokens_per_pos_total",
            "spec_decode_num_draft_tokens_per_pos_total", "spec_decode_num_draft_tokens_by_drafter_total",
            "spec_decode_num_accepted_tokens_by_drafter_total"}


class Metrics:
    def __init__(self):
        self._lock = threading.Lock()
        self._values: dict[tuple[str, tuple], float] = defaultdict(float)

    def add(self, name: str, value: float = 1, **labels) -> None:
        with self._lock:
            self._values[(name, tuple(sorted(labels.items())))] += value

    def request(self, status: int) -> None:
        self.add("requests_total", status=str(status))
        if status == 503:
            self.add("requests_rejected_total")

    def observe(self, stats: Stats, finish_reason: str) -> None:
        """Add one finished generation's counts."""
        self.add("request_success_total", finished_reason=finish_reason)
        self.add("prompt_tokens_total", stats.prompt_tokens)
        self.add("prompt_tokens_evaluated_total", stats.prefill_tokens)
        self.add("generation_tokens_total", stats.generated_tokens)
        self.add("target_passes_total", stats.target_passes)
        self.add("generation_seconds_total", stats.wall_s)
        # Every non-empty draft has a token at position 0, so position 0's count is the number of drafts.
        self.add("spec_decode_num_drafts_total", stats.per_position_drafted[0] if stats.per_position_drafted else 0)
        self.add("spec_decode_num_draft_tokens_total", stats.drafted)
        self.add("spec_decode_num_accepted_tokens_total", stats.accepted)
        for pos, (d, a) in enumerate(zip(stats.per_position_drafted, stats.per_position_accepted)):
            self.add("spec_decode_num_draft_tokens_per_pos_total", d, position=str(pos))
            self.add("spec_decode_num_accepted_tokens_per_pos_total", a, position=str(pos))
        for name, ds in stats.drafters.items():
            self.add("spec_decode_num_draft_tokens_by_drafter_total", ds.drafted, drafter=name)
            self.add("spec_decode_num_accepted_tokens_by_drafter_total", ds.accepted, drafter=name)

    def render(self, running: int = 0, waiting: int = 0) -> str:
        """Prometheus text exposition format 0.0.4."""
        with self._lock:
            values = dict(self._values)
        values[("num_requests_running", ())] = running
        values[("num_requests_waiting", ())] = waiting
        lines = []
        for name, (kind, text) in HELP.items():
            lines += [f"# HELP {P}{name} {text}", f"# TYPE {P}{name} {kind}"]
            series = sorted((labels, v) for (n, labels), v in values.items() if n == name)
            if not series and name not in LABELLED:
                series = [((), 0.0)]  # unlabelled series are always present, starting at 0
            for labels, v in series:
                lab = "{" + ",".join(f'{k}="{val}"' for k, val in labels) + "}" if labels else ""
                lines.append(f"{P}{name}{lab} {_num(v)}")
        return "\n".join(lines) + "\n"


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(float(v))
