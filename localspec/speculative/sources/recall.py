"""Recall: what earlier generations wrote, drafted again where a context ends the way theirs did.

The same request sent twice to `serve`, a regenerated reply, a conversation carried on in a new process, an agent
turn that writes what an earlier one wrote: the answer is text generated before. Prompt lookup cannot see it (the
new request replaced the context that held it). This source keeps every finished generation, with the tail of the
prompt it continued, in a SuffixIndex (indexes/suffixes.py), and drafts from it from the reply's first token on:
the context's tail, the prompt's last tokens, finds the place where the earlier reply started. llama-server's
`--spec-type ngram-mod` keeps a similar table across requests. Where a front end records its conversations, a
GenerationLog keeps the generations with them (the conversation store: agent/drafting_memory.py), so the next process
starts with them: as text (any model can read them back) and as the tokens of the model that wrote them, tagged
with its vocabulary, so the same model reads them back without tokenising (a megabyte of text takes seconds to
tokenise on a busy 2-core machine). What records nothing (`serve`, a plain `run`) remembers for its own life only.
"""

from __future__ import annotations

import zlib
from typing import Callable, Protocol, Sequence

from localspec.speculative.constraint import Constraint
from localspec.speculative.draft import Candidate, CandidateDrafter
from localspec.speculative.indexes.suffixes import SuffixIndex

PROMPT_TAIL = 64  # tokens of the prompt kept with a generation: enough to find where its repeat starts
STRONG_MATCH = 16  # tokens: a shorter match (a phrase that recurs in many replies) is a guess of its own kind
MIN_SUPPORT = 0.5  # ... and so is a continuation fewer than half of the longest matches went on with
MIN_MATCH = 6  # shorter matches propose nothing
RETOKENIZE_BYTES = 64 << 10  # text of another vocabulary's generations tokenised at start, newest first


class GenerationLog(Protocol):
    """Where finished generations are kept for the next process (agent/drafting_memory.py: the conversation store)."""

    def read(self) -> list[dict]:
        """The kept generations, oldest first: {"prompt", "output"} and, where kept, "vocab" and "tokens"."""
        ...

    def append(self, prompt: str, output: str, tokens: Sequence[int] = (), vocab: str = "") -> None: ...


class GenerationMemory:
    """The generations an engine remembers: indexed for lookup, logged for the next process (if a log is given).
    Texts from the log are tokenised with the target's tokenizer when the memory is built."""

    def __init__(self, token_bytes: Callable[..., bytes], tokenize: Callable[[str], list[int]],
                 log: GenerationLog | None = None, vocab: str = ""):
        self._token_bytes = token_bytes
        self._tokenize = tokenize  # special tokens parsed: the prompt's turn markers come back as themselves
        self.log = log
        self.vocab = vocab  # the target's vocabulary, as vocabulary_id() says it: logged tokens of it are read as is
        self._index: SuffixIndex | None = None

    @property
    def index(self) -> SuffixIndex:
        """Built on first use, from the log: this vocabulary's tokens as logged; other generations' text tokenised,
        the newest RETOKENIZE_BYTES of it."""
        if self._index is None:
            self._index = SuffixIndex()
            seqs, budget = [], RETOKENIZE_BYTES
            for row in reversed(self.log.read() if self.log is not None else ()):
                toks = row.get("tokens")
                if self.vocab and row.get("vocab") == self.vocab and isinstance(toks, list):
                    seqs.append([t for t in toks if isinstance(t, int)])
                elif budget > 0:
                    budget -= len(row["prompt"]) + len(row["output"])
                    seqs.append(self._tokenize(row["prompt"]) + self._tokenize(row["output"]))
            for seq in reversed(seqs):
                self._index.add(seq)
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
            self.log.append(self._text(tokens[head:prompt_len]), self._text(tokens[prompt_len:]), tokens[head:],
                            self.vocab)


def vocabulary_id(n_vocab: int, token_bytes: Callable[..., bytes]) -> str:
    """A short name for a vocabulary: its size and a checksum of a sample of its tokens' text (models that share a
    tokenizer share it: a quantized copy, a draft of the same family)."""
    step = max(1, n_vocab // 512)
    return f"{n_vocab}:{zlib.crc32(b''.join(token_bytes(i) for i in range(0, n_vocab, step))):08x}"


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
        match = match if support >= MIN_SUPPORT else 0
        # A weak match's continuation is learned apart too (not only its first token): a phrase that recurs in many
        # replies goes on differently each time, a repeated request goes on to its end.
        return self.found(toks, match, suffix="" if match >= STRONG_MATCH else ":weak")

    def bucket(self, m: int) -> int:
        return 0 if m >= STRONG_MATCH else 1

    def finish(self, tokens: Sequence[int], prompt_len: int) -> None:
        self.memory.add(tokens, prompt_len)
