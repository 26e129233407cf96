"""From a conversation to prompt tokens with the model's own chat template (shared by run, agent, bench, serve).

Special tokens come only from the template's own structure. Message content (user text, tool results, assistant
history, tool definitions, server requests) is hostile: marker text in it is tokenized as plain text
(neutralize.py), so a file that says `<|im_start|>system` cannot open a system turn.
"""

from __future__ import annotations

import json

from localspec.prompting.chatml import CHATML_TEMPLATE
from localspec.prompting.formats import ToolCallFormat, detect_format
from localspec.prompting.markers import model_markers
from localspec.prompting.neutralize import Neutralizer
from localspec.prompting.template import prepare_messages, render_chat


def _specials(model) -> tuple[str, str]:
    bos = model.token_bytes(model.bos).decode("utf-8", "replace") if model.bos >= 0 else ""
    eos = model.token_bytes(model.eos).decode("utf-8", "replace") if model.eos >= 0 else ""
    return bos, eos


def render_prompt(model, messages: list[dict], tools: list[dict] | None = None, *,
                  add_generation_prompt: bool = True, template_vars: dict | None = None) -> str:
    """The prompt as text (for display and benchmarks; the model gets chat_prompt_tokens). `template_vars` reach
    the template as extra variables (reasoning.template_vars: Qwen3's `enable_thinking`)."""
    template = model.chat_template
    msgs, tool_defs = prepare_messages(template, messages, tools)
    bos, eos = _specials(model)
    return render_chat(template, msgs, tools=tool_defs, add_generation_prompt=add_generation_prompt,
                       bos_token=bos, eos_token=eos, **(template_vars or {}))


def _structure(template: str, fmt: ToolCallFormat) -> str:
    """The fixed text a prompt is built from: the template, and what prepare_messages writes in the format's name."""
    return "\n".join([template, fmt.call_prefix, fmt.call_suffix, *fmt.triggers, fmt.render_result("", "")])


def chat_prompt_tokens(model, messages: list[dict], tools: list[dict] | None = None, *,
                       add_generation_prompt: bool = True, template_vars: dict | None = None) -> list[int]:
    template = model.chat_template or CHATML_TEMPLATE
    markers = model_markers(model, _structure(template, detect_format(template)))
    guard = Neutralizer(markers, messages, tools, template)
    safe_messages = guard.messages(messages, template)
    safe_tools = guard.value(tools) if tools else tools
    text = render_prompt(model, safe_messages, safe_tools, add_generation_prompt=add_generation_prompt,
                         template_vars=template_vars)
    bos, _ = _specials(model)
    # Templates that write the BOS themselves must not get a second one from the tokenizer.
    add_special = model.add_bos and not (bos and text.startswith(bos))
    if not guard.used:  # no marker text in any message: the prompt is tokenized exactly as before
        return model.tokenize(text, add_special=add_special, parse_special=True)
    # Cut at the neutralized markers: no token spans a cut. (A SentencePiece vocabulary that adds a space prefix,
    # e.g. Llama 2's, then starts each piece with one; only prompts that held marker text pay that.)
    tokens = [model.bos] if add_special else []
    for from_content, piece in guard.pieces(text):
        if from_content:
            tokens += plain_tokens(model, piece, markers.ids)
        else:
            tokens += model.tokenize(piece, add_special=False, parse_special=True)
    if add_special and model.add_eos:  # what tokenize(add_special=True) would have appended
        tokens.append(model.eos)
    return tokens


def plain_tokens(model, text: str, forbidden: frozenset[int]) -> list[int]:
    """`text` as ordinary text tokens. llama.cpp matches user-defined tokens (Qwen's `<tool_call>`) even with
    parse_special off, so such text is tokenized in two parts that each cannot hold the whole marker."""
    tokens = model.tokenize(text, add_special=False, parse_special=False)
    if len(text) < 2 or not forbidden.intersection(tokens):
        return tokens
    return plain_tokens(model, text[:1], forbidden) + plain_tokens(model, text[1:], forbidden)


def tool_format(model) -> ToolCallFormat:
    """How this model writes tool calls (from its template; the generic Hermes-style convention otherwise)."""
    return detect_format(model.chat_template)


def stable_prefix(model, system: list[dict], tools: list[dict] | None = None, *,
                  template_vars: dict | None = None) -> list[int]:
    """The prompt tokens every conversation starting with the `system` messages and offered `tools` begins with:
    what two renderings that differ only in their first user message share. Template-agnostic: a template that
    puts the tool definitions in the user's turn shares less, and that is what can be kept (runtime/prefixes.py).
    Memoised per model, system text, tools and template variables: a chat asks once per step."""
    key = (id(model), str(getattr(model, "path", "")), hash(model.chat_template),
           json.dumps([system, tools, template_vars], sort_keys=True, default=str))
    found = _STABLE.get(key)
    if found is None:
        a, b = (chat_prompt_tokens(model, list(system) + [{"role": "user", "content": text}], tools,
                                   template_vars=template_vars) for text in ("1", "2"))
        n = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        found = _STABLE[key] = a[:n]
        while len(_STABLE) > 32:
            _STABLE.pop(next(iter(_STABLE)))
    return list(found)


_STABLE: dict[tuple, list[int]] = {}
