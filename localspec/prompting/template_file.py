"""A chat template given by the user (`--chat-template FILE`, `[chat_templates]` in config.toml), and the warning
when a model has none at all.

Why warn: a GGUF without `tokenizer.chat_template` is rendered with ChatML (as llama.cpp does). Models trained on
another format then see tags they do not know and echo `<|im_start|>` into their replies; the user must learn why
and how to give the right template.
"""

from __future__ import annotations

from pathlib import Path

from localspec.errors import ConfigError
from localspec.prompting.jinja_env import compile_template


def fallback_warning(model_name: str) -> str:
    return (f"{model_name} has no chat template: using the ChatML fallback (<|im_start|>role … <|im_end|>). If "
            "replies show <|im_start|> or run on, give the model's own template with --chat-template FILE, or "
            "per pair in config.toml: localspec config set chat_templates.PAIR FILE")


def read_template_file(path: str | Path) -> str:
    """The Jinja text of a template file; ConfigError (one line) when it is missing, unreadable or not Jinja."""
    p = Path(path).expanduser()
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"chat template {p}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"chat template {p}: cannot read it ({getattr(exc, 'strerror', None) or exc})") from None
    if not text.strip():
        raise ConfigError(f"chat template {p}: the file is empty")
    try:
        compile_template(text)
    except ConfigError as exc:  # "chat template has a syntax error (line N): ..."
        raise ConfigError(f"{p}: {exc}") from None
    return text


def apply_chat_template(model, path: str | Path | None) -> str | None:
    """Give `model` the template in `path` when one is given (it replaces the GGUF's own). Returns the warning to
    show when the model is left on the ChatML fallback, else None."""
    if path:
        model.chat_template = read_template_file(path)  # Model.chat_template is a cached property: this replaces it
        return None
    if not model.chat_template:
        return fallback_warning(Path(model.path).name)
    return None
