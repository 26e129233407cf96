"""History drafter: earlier tool calls (this session's and, kept by the caller, earlier sessions') propose
continuations for the call being generated, by longest match of the current tail inside them."""

from __future__ import annotations

from typing import Callable, Iterable, Sequence

from localspec.speculative.constraint import Constraint
from localspec.speculative.draft import Candidate, CandidateDrafter
from localspec.speculative.sources.ngram import NgramIndex, match_bucket

SEPARATOR = -1  # never a real token id: matches cannot run across two stored calls


class CallHistory:
    """Past calls as text (tokenised per model on demand), the newest `max_calls`. Keeping them between sessions
    is the caller's: `calls` are the kept ones to start from, and `on_add(text, tool)` hears of each new one."""

    def __init__(self, calls: Iterable[str] = (), *, max_calls: int = 2000,
                 on_add: Callable[[str, str | None], None] | None = None):
        self.max_calls = max_calls
        self.calls: list[str] = list(calls)[-max_calls:]
        self.on_add = on_add

    def add(self, text: str, tool: str | None = None) -> None:
        self.calls.append(text)
        del self.calls[:-self.max_calls]
        if self.on_add is not None:
            self.on_add(text, tool)

    def clear(self) -> None:
        self.calls = []


class HistoryDrafter(CandidateDrafter):
    name = "history"
    bucket = staticmethod(match_bucket)

    def __init__(self, tokenize, history: CallHistory | None = None, *, max_len: int = 32):
        self._tokenize = tokenize  # text -> tokens, the target's tokenizer without special tokens
        self.history = history if history is not None else CallHistory()
        self.max_len = max_len
        self.index = NgramIndex(1)
        self._seen = 0

    def _refresh(self) -> None:
        calls = self.history.calls
        if self._seen > len(calls):
            self.index, self._seen = NgramIndex(1), 0
        for text in calls[self._seen:]:
            self.index.add(self._tokenize(text) + [SEPARATOR])
        self._seen = len(calls)

    def add_call_tokens(self, tokens: Sequence[int], text: str, tool: str | None = None) -> None:
        """Remember a call exactly as the model produced it (no re-tokenisation mismatch in this session)."""
        self.history.add(text, tool)
        self.index.add(list(tokens) + [SEPARATOR])
        self._seen = len(self.history.calls)

    def candidate(self, context: Sequence[int], max_len: int,
                  constraint: Constraint | None = None) -> Candidate | None:
        self._refresh()
        toks, m = self.index.best_continuation(context, min(max_len, self.max_len))
        if SEPARATOR in toks:
            toks = toks[: toks.index(SEPARATOR)]
        return self.found(toks, m)

    def reset(self) -> None:
        self.index, self._seen = NgramIndex(1), 0
