"""Whose request it is, and what the server remembers for each: one drafting memory per API key.

Why: `serve` drafted from one memory for every client: the text of earlier requests and replies (the copy memory,
recall's generations, the calls it learned), and the owner's stored tool calls. Each response reports what each
drafter drafted and how much was accepted, so a client could send a tool whose argument is an `enum` of guesses and
read from `history: {drafted: 1}` whether a stored `DB_PASSWORD=...`, or another client's request, continues with
one of them: a secret read a character at a time. And `cached_tokens` said how much of its prompt matched the
previous client's.

So a tenant is one API key (`serve --api-key` may be given several times): each has an engine of its own (its
drafting memory, the policy's acceptance rates), all on the one loaded pair and sharing what a pass costs on this
machine (the CostModel). Without keys, or with one, every client is the same tenant: whoever can reach the server
(loopback: every program and user of this machine) shares one memory, as before. The owner's stored calls are in
it only with `--draft-from-history`.

With several keys, what a response says about the prompt cache is this key's own: the prompt tokens its earlier
requests share with this one (`cached_tokens`, `reused_prefix_tokens`), never what another key's request left in
the cache (the KV cache and the saved prefix states are still shared, for speed: timing can tell, and
docs/security.md says so).
"""

from __future__ import annotations

import threading
from collections import Counter, deque
from dataclasses import replace
from typing import Callable, Sequence

import numpy as np

from localspec.speculative import SpecEngine, Stats

PROMPTS_KEPT = 24  # earlier prompts per key that its reported cache figures are measured against

EngineFactory = Callable[[], SpecEngine]


class Tenant:
    def __init__(self, name: str, engine: SpecEngine):
        self.name = name
        self.engine = engine
        self.prompts: deque[np.ndarray] = deque(maxlen=PROMPTS_KEPT)


class Tenants:
    """The engines by tenant. `first` is the engine opened with the pair (calibrated); `make` builds one more for
    each further key (None: every request shares `first`, as a single tenant). `isolated`: several keys, so each
    response's cache figures are its key's own (see `view`)."""

    def __init__(self, first: SpecEngine, make: EngineFactory | None = None, *, isolated: bool = False):
        self.first = first
        self.make = make
        self.isolated = isolated and make is not None
        self._by_name: dict[str, Tenant] = {}
        self._lock = threading.Lock()

    def get(self, name: str) -> Tenant:
        with self._lock:
            tenant = self._by_name.get(name if self.isolated else "")
            if tenant is None:
                key = name if self.isolated else ""
                engine = self.first if not self._by_name or self.make is None else self.make()
                tenant = self._by_name[key] = Tenant(key, engine)
            return tenant

    def view(self, tenant: Tenant, prompt: Sequence[int], stats: Stats) -> Stats:
        """The statistics a response reports to `tenant`, and `prompt` remembered for its next one.

        Single tenant: as measured. Several: what the prompt cache gave is replaced by what this key's own earlier
        prompts share with this one (at most all but the prompt's last token, which is always computed), and the
        draft model's decode shapes, which its prefill sizes (the draft's own cache) shape, are left out."""
        tokens = np.asarray(prompt, dtype=np.int64)
        if not self.isolated:
            return stats
        own = min(max((_common(tokens, p) for p in tenant.prompts), default=0), max(len(tokens) - 1, 0))
        tenant.prompts.append(tokens)
        # Later phases of a turn (a call after text) continue this request's own cache: their prefill stays.
        first_phase = stats.reused_prefix_tokens
        return replace(stats, reused_prefix_tokens=own, restored_prefix_tokens=0,
                       prefill_tokens=max(stats.prefill_tokens + first_phase - own, 0), draft_shapes=Counter(),
                       draft_decode_s=0.0)


def _common(a: np.ndarray, b: np.ndarray) -> int:
    n = min(len(a), len(b))
    differ = np.flatnonzero(a[:n] != b[:n])
    return int(differ[0]) if len(differ) else n
