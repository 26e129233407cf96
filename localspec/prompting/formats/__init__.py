"""Tool-call formats: how a model spells a call, how to parse it back, how to detect it."""

from localspec.prompting.formats.base import ParseResult, ToolCall, ToolCallFormat
from localspec.prompting.formats.detect import (
    FORMATS,
    GENERIC,
    HERMES,
    LLAMA3_JSON,
    MISTRAL,
    MISTRAL_ARGS,
    detect_format,
    get_format,
)
from localspec.prompting.formats.gemma import FUNCTIONGEMMA, GEMMA4, GEMMA_TOOL_CODE

__all__ = [
    "FORMATS",
    "FUNCTIONGEMMA",
    "GEMMA4",
    "GEMMA_TOOL_CODE",
    "GENERIC",
    "HERMES",
    "LLAMA3_JSON",
    "MISTRAL",
    "MISTRAL_ARGS",
    "ParseResult",
    "ToolCall",
    "ToolCallFormat",
    "detect_format",
    "get_format",
]
