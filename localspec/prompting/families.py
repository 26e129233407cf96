"""Chat-template families: the template a GGUF without `tokenizer.chat_template` gets, from what its architecture and
tokenizer say it is, and the names `--chat-template` and config.toml's chat_templates take besides a file.

Why: such a file used to get ChatML, which a model of another family was never trained on (Gemma-3-270M echoed the
prompt and ran on, and made no valid tool call unless forced). llama.cpp knows the families by name
(llama_chat_builtin_templates in src/llama-chat.cpp: gemma, llama3, chatml, phi4, mistral-v7, ...) and tells them
apart by marker text (llm_chat_detect_template); a file without a template still names its architecture
(`general.architecture`) and carries its family's special tokens, which is what `detect` reads. Each family renders
with its real Jinja template, as published with the models (localspec/data/templates/, from llama.cpp's
models/templates/); two have none there and render as llama.cpp's built-in code does (chatml, phi4).

Families are named as llama.cpp names them, plus the model families whose real templates differ from plain ChatML
(qwen2.5 and qwen3 tell their tools and reasoning apart from it).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Protocol

from localspec.prompting.chatml import CHATML_TEMPLATE

# llama.cpp's built-in phi4 rendering (llm_chat_apply_template, LLM_CHAT_TEMPLATE_PHI_4), as Jinja.
PHI4_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '<|im_sep|>' + message['content'] + '<|im_end|>' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant<|im_sep|>' }}{% endif %}"
)


@dataclass(frozen=True)
class Family:
    name: str  # as llama.cpp names it (or the model family): what --chat-template and config.toml take
    source: str  # the real template's file in localspec/data/templates/, or the Jinja text itself
    # The tool-call format (prompting/formats/) where the template's text does not show it: Gemma 3's template
    # has no tools; Google's documented convention is a ```tool_code``` block.
    call_format: str | None = None
    markers: tuple[str, ...] = ()  # special tokens the vocabulary has (all of them)
    architectures: tuple[str, ...] = ()  # general.architecture values (any of them), where markers are shared

    @property
    def template(self) -> str:
        return _load(self.source)


# In the order `detect` tries them: the most specific markers first.
FAMILIES: tuple[Family, ...] = (
    Family("gpt-oss", "openai-gpt-oss-120b.jinja", markers=("<|start|>", "<|channel|>", "<|message|>")),
    Family("mistral-v7", "Mistral-Small-3.2-24B-Instruct-2506.jinja", markers=("[SYSTEM_PROMPT]", "[INST]")),
    Family("mistral-v3-tekken", "mistralai-Mistral-Nemo-Instruct-2407.jinja",
           markers=("[INST]", "[AVAILABLE_TOOLS]")),
    Family("gemma4", "google-gemma-4-31B-it.jinja", markers=("<|turn>", "<turn|>")),
    Family("gemma", "google-gemma-2-2b-it.jinja", call_format="gemma_tool_code",
           markers=("<start_of_turn>", "<end_of_turn>")),
    Family("llama3", "meta-llama-Llama-3.1-8B-Instruct.jinja",
           markers=("<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>")),
    Family("granite", "ibm-granite-granite-3.3-2B-Instruct.jinja", markers=("<|start_of_role|>", "<|end_of_role|>")),
    Family("command-r", "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja",
           markers=("<|START_OF_TURN_TOKEN|>", "<|USER_TOKEN|>")),
    Family("deepseek3", "deepseek-ai-DeepSeek-V3.1.jinja", markers=("<｜User｜>", "<｜Assistant｜>")),
    Family("phi4", PHI4_TEMPLATE, markers=("<|im_start|>", "<|im_sep|>")),
    Family("qwen3", "Qwen-Qwen3-0.6B.jinja", markers=("<|im_start|>", "<|im_end|>"),
           architectures=("qwen3", "qwen3moe")),
    Family("qwen2.5", "Qwen-Qwen2.5-7B-Instruct.jinja", markers=("<|im_start|>", "<|im_end|>"),
           architectures=("qwen2", "qwen2moe")),
    Family("chatml", CHATML_TEMPLATE, markers=("<|im_start|>", "<|im_end|>")),
    Family("phi3", "microsoft-Phi-3.5-mini-instruct.jinja", markers=("<|assistant|>", "<|end|>", "<|user|>")),
)
BY_NAME = {f.name: f for f in FAMILIES}
CHATML = BY_NAME["chatml"]


@lru_cache(maxsize=None)
def _load(source: str) -> str:
    if not source.endswith(".jinja"):
        return source
    return resources.files("localspec").joinpath(f"data/templates/{source}").read_text(encoding="utf-8")


def names() -> str:
    return ", ".join(f.name for f in FAMILIES)


def family_format(template: str | None) -> str | None:
    """The tool-call format a family's template implies where its text does not show one (detect_format asks)."""
    for f in FAMILIES:
        if f.call_format and template == f.template:
            return f.call_format
    return None


class Vocab(Protocol):
    """What detection reads of a model (runtime Model has it, a vocabulary-only load is enough)."""

    def meta(self, key: str) -> str | None: ...

    def tokenize(self, text: str, *, add_special: bool | None = None, parse_special: bool = True) -> list[int]: ...


def has_marker(model: Vocab, text: str) -> bool:
    """The vocabulary has `text` as one token (with special tokens parsed: a marker is one of them)."""
    return len(model.tokenize(text, add_special=False, parse_special=True)) == 1


@dataclass(frozen=True)
class Detected:
    family: Family | None  # None: no family fits (ChatML stands in)
    architecture: str  # general.architecture ("" when the file says none)
    why: str  # what gave it away, for the user: "architecture gemma3, <start_of_turn> tokens"


def detect(model: Vocab) -> Detected:
    """The family a GGUF's architecture and special tokens imply."""
    arch = model.meta("general.architecture") or ""
    for f in FAMILIES:
        if f.architectures and arch not in f.architectures:
            continue
        if all(has_marker(model, m) for m in f.markers):
            shown = f"architecture {arch}, " if arch else ""
            return Detected(f, arch, f"{shown}{' '.join(f.markers[:2])} tokens")
    return Detected(None, arch, f"architecture {arch or 'unknown'}, no known turn markers")
