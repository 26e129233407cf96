"""The sandboxed Jinja environment chat templates run in, set up the way Hugging Face's
`apply_chat_template` does, so GGUF templates (copied from HF tokenizer configs) render identically.

A chat template is untrusted input from a downloaded file: it runs in an
ImmutableSandboxedEnvironment (no attribute tricks, no mutating builtins).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

import jinja2
from jinja2 import meta, nodes
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError

from localspec.errors import ConfigError


class TemplateRaised(jinja2.TemplateError):
    """The template itself refused the conversation via raise_exception()."""


def _raise_exception(message: str):
    raise TemplateRaised(message)


def _tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    # HF's override: Jinja's own tojson HTML-escapes and takes no separators.
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _strftime_now(fmt: str) -> str:
    return datetime.now().strftime(fmt)


class _GenerationTag(Extension):
    """`{% generation %}...{% endgeneration %}` (HF marks assistant tokens for training masks);
    for rendering it is a no-op wrapper."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.Scope(body).set_lineno(lineno)


def _make_env() -> ImmutableSandboxedEnvironment:
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[_GenerationTag, loopcontrols]
    )
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    return env


ENV = _make_env()


def one_line(text: object) -> str:
    return " ".join(str(text).split())


@lru_cache(maxsize=32)
def compile_template(source: str) -> jinja2.Template:
    """Compile once per distinct template text; syntax errors become a one-line ConfigError."""
    try:
        return ENV.from_string(source)
    except jinja2.TemplateSyntaxError as exc:
        raise ConfigError(f"chat template has a syntax error (line {exc.lineno}): {one_line(exc.message)}") from None


def render_error(exc: Exception) -> ConfigError:
    if isinstance(exc, TemplateRaised):
        return ConfigError(f"chat template rejected the conversation: {one_line(exc)}")
    if isinstance(exc, SecurityError):
        return ConfigError(f"chat template attempted an unsafe operation: {one_line(exc)}")
    return ConfigError(f"chat template failed to render: {type(exc).__name__}: {one_line(exc)}")


@dataclass(frozen=True)
class TemplateCaps:
    """What a template can render natively."""

    tools: bool  # reads the `tools` variable (tool definitions)
    tool_calls: bool  # renders assistant `tool_calls`
    tool_role: bool  # renders role "tool" (or Llama's "ipython") messages


@lru_cache(maxsize=32)
def template_caps(source: str) -> TemplateCaps:
    try:
        names = meta.find_undeclared_variables(ENV.parse(source))
    except jinja2.TemplateSyntaxError as exc:
        raise ConfigError(f"chat template has a syntax error (line {exc.lineno}): {one_line(exc.message)}") from None
    tool_role = any(f"{q}{role}{q}" in source for q in "'\"" for role in ("tool", "ipython"))
    return TemplateCaps(
        tools=bool({"tools", "custom_tools"} & names),
        tool_calls="tool_calls" in source,
        tool_role=tool_role,
    )
