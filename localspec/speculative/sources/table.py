"""The open list of candidate sources the hybrid drafts from: one row each, naming the drafter switch that turns it
on (registry.py: what users pick with `--drafters`) and how it is built. Adding a source is one class under
sources/ and one row here; the builder, the hybrid and the statistics need nothing else.

Row order is the order the hybrid asks them in (an earlier source wins a tie). A row in the model's slot is a model
that drafts: the hybrid asks it where no other source has a guess, priced per drafted token (policy/model_price.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from localspec.speculative.draft import CandidateDrafter, Drafter
from localspec.speculative.indexes.memory import SpanMemory
from localspec.speculative.sources.copy import CopyDrafter
from localspec.speculative.sources.draft_model import ModelDrafter
from localspec.speculative.sources.ngram import NgramDrafter
from localspec.speculative.sources.past_calls import CallHistory, HistoryDrafter
from localspec.speculative.sources.recall import GenerationMemory, RecallDrafter
from localspec.speculative.sources.spans import SpanDrafter
from localspec.speculative.sources.textlookup import TextLookupDrafter
from localspec.speculative.sources.toolnames import ToolNameDrafter
from localspec.speculative.sources.translated import TranslatedDrafter

if TYPE_CHECKING:
    from localspec.runtime.context import Context
    from localspec.speculative.translation import Vocabulary


@dataclass(frozen=True)
class DraftKit:
    """A draft model of another vocabulary than the target's (LoadedPair.translation), for the translated source."""

    ctx: Context  # the draft model's context
    target: Vocabulary  # the target's vocabulary (runtime Model)
    max_len: int  # draft_max
    p_min: float  # draft_p_min
    timings: tuple[tuple[int, int, float], ...] = ()  # its decodes timed at load (LoadedPair.draft_timings)


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
    draft: DraftKit | None = None  # a draft model of another family (None: none, or the target's own family)


@dataclass(frozen=True)
class SourceRow:
    switch: str  # the registry drafter that turns it on
    build: Callable[[SourceKit], Drafter | None]  # None: the kit has nothing to build it from
    model_slot: bool = False  # it drafts with a model: the hybrid asks it in the draft model's place


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
    # A draft model of another family: its text, tokenized with the target's vocabulary.
    SourceRow("model", lambda k: TranslatedDrafter(k.draft.ctx, k.draft.target, max_len=k.draft.max_len,
                                                   p_min=k.draft.p_min, timings=k.draft.timings)
              if k.draft else None, model_slot=True),
)


def build_sources(kit: SourceKit, switches: set[str]) -> list[CandidateDrafter]:
    built = (row.build(kit) for row in SOURCES if row.switch in switches and not row.model_slot)
    return [src for src in built if isinstance(src, CandidateDrafter)]


def build_model_source(kit: SourceKit, switches: set[str]) -> ModelDrafter | None:
    """The source in the draft model's slot, if a row there can be built from `kit`."""
    for row in SOURCES:
        if row.model_slot and row.switch in switches:
            src = row.build(kit)
            if isinstance(src, ModelDrafter):
                return src
    return None
