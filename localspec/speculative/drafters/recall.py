"""Recall: what earlier generations wrote, drafted again where a context ends the way theirs did.

The same request sent twice to `serve`, a regenerated reply, `run` repeated in a new process, an agent turn that
writes what an earlier one wrote: the answer is text generated before. Prompt lookup cannot see it (the new request
replaced the context that held it). This source keeps every finished generation, with the tail of the prompt it
continued, in a SuffixIndex (drafters/suffixes.py), and drafts from it from the reply's first token on: the
context's tail, the prompt's last tokens, finds the place where the earlier reply started. llama-server's
`--spec-type ngram-mod` keeps a similar table across requests. A GenerationLog persists the generations (JSON lines
beside the call history), so the next process starts with them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable, Sequence

from localspec.speculative.constraint import Constraint
from localspec.speculative.draft import Candidate, CandidateDrafter
from localspec.speculative.drafters.suffixes import SuffixIndex

PROMPT_TAIL = 64  # tokens of the prompt kept with a generation: enough to find where its repeat starts
STRONG_MATCH = 16  # tokens: a shorter match (a phrase that recurs in many replies) is a guess of its own kind
MIN_SUPPORT = 0.5  # ... and so is a continuation fewer than half of the longest matches went on with
MIN_MATCH = 6  # shorter matches propose nothing


class GenerationLog:
    """Finished generations as text (the prompt's tail, the output), appended as JSON lines and read back at start;
    when the file outgrows `max_bytes` its older half is dropped."""

    def __init__(self, path: str | os.PathLike | None, *, max_bytes: int = 1 << 20):
        self.path = Path(path) if path else None
        self.max_bytes = max_bytes

    def read(self) -> list[tuple[str, str]]:
        if self.path is None or not self.path.exists():
            return []
        out = []
        for line in self.path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                row = json.loads(line)
                out.append((str(row["prompt"]), str(row["output"])))
            except (ValueError, KeyError, TypeError):
                continue  # a damaged line costs one remembered generation, not the log
        return out

    def append(self, prompt: str, output: str) -> None:
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps({"prompt": prompt, "output": output}) + "\n")
        if self.path.stat().st_size > self.max_bytes:
            lines = self.path.read_text(encoding="utf-8", errors="replace").splitlines()
            self.path.write_text("".join(x + "\n" for x in lines[len(lines) // 2:]), encoding="utf-8")


class GenerationMemory:
    """The generations an engine remembers: indexed for lookup, logged for the next process (if a log is given).
    Texts from the log are tokenised with the target's tokenizer when the memory is built."""

    def __init__(self, token_bytes: Callable[..., bytes], tokenize: Callable[[str], list[int]],
                 log: GenerationLog | None = None):
        self._token_bytes = token_bytes
        self._tokenize = tokenize  # special tokens parsed: the prompt's turn markers come back as themselves
        self.log = log
        self._index: SuffixIndex | None = None

    @property
    def index(self) -> SuffixIndex:
        """Built on first use (reading the log costs a tokenisation of it: not for engines that never draft)."""
        if self._index is None:
            self._index = SuffixIndex()
            for prompt, output in (self.log.read() if self.log is not None else ()):
                self._index.add(self._tokenize(prompt) + self._tokenize(output))
        return self._index

    def _text(self, tokens: Sequence[int]) -> str:
        return b"".join(self._token_bytes(t) for t in tokens).decode("utf-8", "replace")

    def add(self, tokens: Sequence[int], prompt_len: int) -> None:
        """A finished generation: `tokens` is its prompt followed by what it generated."""
        if len(tokens) <= prompt_len:
            return
        head = max(prompt_len - PROMPT_TAIL, 0)
        self.index.add(tokens[head:])
        if self.log is not None:
            self.log.append(self._text(tokens[head:prompt_len]), self._text(tokens[prompt_len:]))


class RecallDrafter(CandidateDrafter):
    name = "history"  # reported with the call history (one switch: what earlier turns and sessions wrote)
    key = "recall"
    remembers = True

    def __init__(self, memory: GenerationMemory):
        self.memory = memory

    def candidate(self, context: Sequence[int], max_len: int,
                  constraint: Constraint | None = None) -> Candidate | None:
        toks, match, support = self.memory.index.find(context, max_len)
        if match < MIN_MATCH:
            return None
        return self.found(toks, match if support >= MIN_SUPPORT else 0)

    def bucket(self, m: int) -> int:
        return 0 if m >= STRONG_MATCH else 1

    def finish(self, tokens: Sequence[int], prompt_len: int) -> None:
        self.memory.add(tokens, prompt_len)
