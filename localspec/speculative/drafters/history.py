"""History drafter: earlier tool calls (this session and, persisted, earlier ones) propose continuations for the
call being generated, by longest match of the current tail inside them."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Sequence

from localspec.private_files import open_append, report, tighten
from localspec.speculative.constraint import Constraint
from localspec.speculative.draft import Candidate, CandidateDrafter
from localspec.speculative.drafters.ngram import NgramIndex, match_bucket

SEPARATOR = -1  # never a real token id: matches cannot run across two stored calls


class CallHistory:
    """Past calls as text (tokenised per model on demand), optionally persisted as JSONL."""

    def __init__(self, path: str | os.PathLike | None = None, *, max_calls: int = 2000,
                 within: str | os.PathLike | None = None):
        """within: localspec's folder above the file (created and tightened with it: the history holds what
        the agent wrote)."""
        self.path = Path(path) if path else None
        self.within = within
        self.max_calls = max_calls
        self.calls: list[str] = []
        if self.path and self.path.exists():
            tighten(self.path.parent)
            tighten(self.path)
            for line in self.path.read_text(encoding="utf-8", errors="replace").splitlines():
                try:
                    self.calls.append(json.loads(line)["text"])
                except (ValueError, KeyError, TypeError):
                    continue  # a damaged line costs one remembered call, not the whole history
            self.calls = self.calls[-max_calls:]

    def add(self, text: str, tool: str | None = None) -> None:
        self.calls.append(text)
        del self.calls[:-self.max_calls]
        if self.path:
            try:
                with open_append(self.path, within=self.within) as fh:
                    fh.write(json.dumps({"tool": tool, "text": text, "ts": round(time.time(), 3)}) + "\n")
            except OSError as exc:  # e.g. a symbolic link there (never written through): keep it in memory only
                report(f"localspec: tool-call history not saved to {self.path}: {exc.strerror or exc}")
                self.path = None

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
