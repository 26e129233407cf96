"""Pick the tool-call format a model was trained on by looking at its chat template's text.

Every recognised format leaves a marker in the template, because the template must render past
calls the way the model writes them. Anything unrecognised gets the generic Hermes convention,
which prepare_messages() teaches the model in the system prompt.
"""

from __future__ import annotations

import re

from localspec.prompting.families import family_format
from localspec.prompting.formats.base import ToolCallFormat
from localspec.prompting.formats.gemma import FUNCTIONGEMMA, GEMMA4, GEMMA_TOOL_CODE
from localspec.prompting.formats.json_formats import HermesFormat, Llama3JsonFormat, MistralArgsFormat, MistralFormat

HERMES = HermesFormat("hermes")
GENERIC = HermesFormat("generic")
LLAMA3_JSON = Llama3JsonFormat()
MISTRAL = MistralFormat()
MISTRAL_ARGS = MistralArgsFormat()

FORMATS: dict[str, ToolCallFormat] = {
    f.name: f
    for f in (GENERIC, HERMES, LLAMA3_JSON, MISTRAL, MISTRAL_ARGS, FUNCTIONGEMMA, GEMMA4, GEMMA_TOOL_CODE)
}


def detect_format(template: str | None) -> ToolCallFormat:
    t = template or ""
    named = family_format(t)  # a family whose template does not show its convention (Gemma 3: ```tool_code```)
    if named is not None:
        return FORMATS[named]
    if "<start_function_call>" in t:
        return FUNCTIONGEMMA
    if "<|tool_call>" in t:
        return GEMMA4
    if "[TOOL_CALLS]" in t:
        return MISTRAL_ARGS if "[ARGS]" in t else MISTRAL
    if "<tool_call>" in t:
        return HERMES
    if "<|python_tag|>" in t or ("<|start_header_id|>" in t and re.search(r'\\?"parameters\\?"', t)):
        return LLAMA3_JSON
    if "tool_code" in t:
        return GEMMA_TOOL_CODE
    return GENERIC


def get_format(name: str) -> ToolCallFormat:
    """Look a format up by name (for a user override); unknown names are a ConfigError."""
    from localspec.errors import ConfigError

    try:
        return FORMATS[name]
    except KeyError:
        raise ConfigError(f"unknown tool-call format {name!r}; known: {', '.join(sorted(FORMATS))}") from None
