"""Render a conversation with a GGUF's own Jinja chat template (sandboxed, HF-compatible).

`render_chat` = `prepare_messages` (adapt tools / tool turns to what the template supports) +
a sandboxed render. If the template itself refuses the conversation (raise_exception), we retry
with the two common incompatibilities removed - a system turn (Gemma 2, early Mistral) and
several calls in one assistant turn (Llama 3.1) - before reporting its message as a ConfigError.
"""

from __future__ import annotations

from localspec.prompting.chatml import CHATML_TEMPLATE
from localspec.prompting.jinja_env import TemplateRaised, compile_template, render_error, template_caps
from localspec.prompting.prepare import fold_system, prepare_messages, split_parallel_calls

__all__ = ["CHATML_TEMPLATE", "prepare_messages", "render_chat", "template_caps"]


def _variants(messages: list[dict]) -> list[list[dict]]:
    out = [messages]
    if any(m.get("role") == "system" for m in messages):
        out.append(fold_system(messages))
    if any(len(m.get("tool_calls") or []) > 1 for m in messages):
        out += [split_parallel_calls(v) for v in list(out)]
    return out


def render_chat(
    template: str | None,
    messages: list[dict],
    *,
    tools: list[dict] | None = None,
    add_generation_prompt: bool = True,
    bos_token: str = "",
    eos_token: str = "",
    **extra,
) -> str:
    """The prompt text for `messages` (OpenAI-style dicts). `template` None/"" uses ChatML.
    Extra keyword arguments reach the template (e.g. enable_thinking=False, date_string=...)."""
    source = template or CHATML_TEMPLATE
    compiled = compile_template(source)
    prepared, template_tools = prepare_messages(source, messages, tools)
    context = dict(
        tools=template_tools,
        add_generation_prompt=add_generation_prompt,
        bos_token=bos_token,
        eos_token=eos_token,
        **extra,
    )
    refusal: TemplateRaised | None = None
    for variant in _variants(prepared):
        try:
            return compiled.render(messages=variant, **context)
        except TemplateRaised as exc:
            refusal = refusal or exc
        except Exception as exc:  # any template bug is the user's config problem, in one line
            raise render_error(exc) from None
    assert refusal is not None  # _variants gives at least one variant, and each one raised
    raise render_error(refusal) from None
