"""Speculative decoding: the draft/verify loop (`decoder.py`), what verification keeps (`verify.py`), the drafting
sources (`sources/`), the hybrid's policy (`policy/`), the indexes the sources search (`indexes/`), grammar
constraints (`grammar.py`, `constraint.py`), prices (`costs.py`, `profile.py`), statistics (`stats.py`), drafter
names (`names.py`), how an engine drafts (`drafting.py`) and its assembly (`builder.py`).

The names below are the package's public interface: other packages import them from here, not from its modules.
They load on first use (PEP 562), so that importing one piece (the policy's table tests, `localspec --help`)
does not load llama.cpp or llguidance.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_PUBLIC = {
    "build_engine": "builder",
    "CostModel": "costs", "PassPrices": "costs",
    "GenParams": "decoder", "SpecEngine": "decoder", "TokenEvent": "decoder",
    "whole_chars": "detok",
    "DRAFT_MAX": "drafting", "DRAFT_P_MIN": "drafting", "DraftingConfig": "drafting", "TARGET_ONLY": "drafting",
    "GrammarConstraint": "grammar", "JSON_OPTIONS": "grammar", "WRAP_UP": "grammar", "check_grammar": "grammar",
    "json_schema_grammar": "grammar", "tool_call_grammar": "grammar", "tools_schema": "grammar",
    "SpanMemory": "indexes.memory",
    "ORIGINS": "names", "TARGET": "names",
    "CostProfile": "profile", "projected_s": "profile",
    "SamplingParams": "sampling",
    "CallHistory": "sources.past_calls",
    "GenerationLog": "sources.recall",
    "Stats": "stats",
}

__all__ = [  # the same names as _PUBLIC (tests/speculative/test_public.py)
    "CallHistory", "CostModel", "CostProfile", "DRAFT_MAX", "DRAFT_P_MIN", "DraftingConfig", "GenParams",
    "GenerationLog", "GrammarConstraint", "JSON_OPTIONS", "ORIGINS", "PassPrices", "SamplingParams", "SpanMemory",
    "SpecEngine", "Stats", "TARGET", "TARGET_ONLY", "TokenEvent", "WRAP_UP", "build_engine", "check_grammar",
    "json_schema_grammar", "projected_s", "tool_call_grammar", "tools_schema", "whole_chars",
]

if TYPE_CHECKING:
    from localspec.speculative.builder import build_engine
    from localspec.speculative.costs import CostModel, PassPrices
    from localspec.speculative.decoder import GenParams, SpecEngine, TokenEvent
    from localspec.speculative.detok import whole_chars
    from localspec.speculative.drafting import DRAFT_MAX, DRAFT_P_MIN, TARGET_ONLY, DraftingConfig
    from localspec.speculative.grammar import (
        JSON_OPTIONS,
        WRAP_UP,
        GrammarConstraint,
        check_grammar,
        json_schema_grammar,
        tool_call_grammar,
        tools_schema,
    )
    from localspec.speculative.indexes.memory import SpanMemory
    from localspec.speculative.names import ORIGINS, TARGET
    from localspec.speculative.profile import CostProfile, projected_s
    from localspec.speculative.sampling import SamplingParams
    from localspec.speculative.sources.past_calls import CallHistory
    from localspec.speculative.sources.recall import GenerationLog
    from localspec.speculative.stats import Stats


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'localspec.speculative' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"localspec.speculative.{module}"), name)
    globals()[name] = value  # once loaded, a plain attribute
    return value
