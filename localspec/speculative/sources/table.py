"""The open list of candidate sources the hybrid drafts from: one row each, naming the drafter switch that turns it
on (registry.py: what users pick with `--drafters`) and how it is built. Adding a source is one class under
sources/ and one row here; the builder, the hybrid and the statistics need nothing else.

Row order is the order the hybrid asks them in (an earlier source wins a tie).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from localspec.speculative.draft import CandidateDrafter
from localspec.speculative.indexes.memory import SpanMemory
from localspec.speculative.sources.copy import CopyDrafter
from localspec.speculative.sources.ngram import NgramDrafter
from localspec.speculative.sources.past_calls import CallHistory, HistoryDrafter
from localspec.speculative.sources.recall import GenerationMemory, RecallDrafter
from localspec.speculative.sources.spans import SpanDrafter
from localspec.speculative.sources.textlookup import TextLookupDrafter
from localspec.speculative.sources.toolnames import ToolNameDrafter


@dataclass(frozen=True)
class SourceKit:
    """What a source may build itself from: the target's vocabulary and what outlives one engine."""

    token_bytes: Callable[..., bytes]  # token -> its bytes (Model.token_bytes)
    tokenize: Callable[[str], list[int]]  # text -> tokens, special tokens parsed, no BOS
    plain: Callable[[str], list[int]]  # text -> tokens, special tokens as plain text, no BOS
    history: CallHistory | None  # earlier tool calls (persisted across sessions by the caller)
    memory: SpanMemory  # text of earlier requests and sessions
    generations: GenerationMemory  # what earlier generations wrote (persisted across sessions by the caller)
    max_draft: int


@dataclass(frozen=True)
class SourceRow:
    switch: str  # the registry drafter that turns it on
    build: Callable[[SourceKit], CandidateDrafter]


SOURCES: tuple[SourceRow, ...] = (
    SourceRow("history", lambda k: HistoryDrafter(k.tokenize, k.history)),
    # Earlier generations, found again where the context ends as their prompt did (a repeated request).
    SourceRow("history", lambda k: RecallDrafter(k.generations)),
    SourceRow("ngram", lambda k: NgramDrafter()),  # prompt lookup on tokens
    # Prompt lookup on text: values copied from prose are tokenised differently in JSON.
    SourceRow("ngram", lambda k: TextLookupDrafter(k.token_bytes, k.plain)),
    SourceRow("ngram", lambda k: SpanDrafter(k.token_bytes, k.plain)),  # where a value starts, a span of the request
    # Which tool a call names, from the request's words (the schema's tools, so part of schema drafting).
    SourceRow("schema", lambda k: ToolNameDrafter(k.token_bytes, k.plain)),
    # Copies across JSON escaping (a file's text into edit_file/write_file strings), many lines per draft.
    SourceRow("ngram", lambda k: CopyDrafter(k.token_bytes, k.plain, max_len=k.max_draft, memory=k.memory)),
)


def build_sources(kit: SourceKit, switches: set[str]) -> list[CandidateDrafter]:
    return [row.build(kit) for row in SOURCES if row.switch in switches]
