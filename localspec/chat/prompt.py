"""From a conversation to prompt tokens with the model's own chat template (shared by run, agent, bench, serve)."""

from __future__ import annotations

from localspec.chat.formats import ToolCallFormat, detect_format
from localspec.chat.template import prepare_messages, render_chat


def render_prompt(model, messages: list[dict], tools: list[dict] | None = None, *,
                  add_generation_prompt: bool = True) -> str:
    template = model.chat_template
    msgs, tool_defs = prepare_messages(template, messages, tools)
    bos = model.token_bytes(model.bos).decode("utf-8", "replace") if model.bos >= 0 else ""
    eos = model.token_bytes(model.eos).decode("utf-8", "replace") if model.eos >= 0 else ""
    return render_chat(template, msgs, tools=tool_defs, add_generation_prompt=add_generation_prompt,
                       bos_token=bos, eos_token=eos)


def chat_prompt_tokens(model, messages: list[dict], tools: list[dict] | None = None, *,
                       add_generation_prompt: bool = True) -> list[int]:
    text = render_prompt(model, messages, tools, add_generation_prompt=add_generation_prompt)
    bos = model.token_bytes(model.bos).decode("utf-8", "replace") if model.bos >= 0 else ""
    # Templates that write the BOS themselves must not get a second one from the tokenizer.
    add_special = model.add_bos and not (bos and text.startswith(bos))
    return model.tokenize(text, add_special=add_special, parse_special=True)


def tool_format(model) -> ToolCallFormat:
    """How this model writes tool calls (from its template; the generic Hermes-style convention otherwise)."""
    return detect_format(model.chat_template)
