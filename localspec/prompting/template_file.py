"""Which chat template a model renders with: one given by the user (`--chat-template NAME|FILE`, `[chat_templates]`
in config.toml: a family's name or a Jinja file), else the GGUF's own, else the family its architecture and tokens
imply (prompting/families.py), else ChatML; and the line that says so when the file had none.

Why say so: a GGUF without `tokenizer.chat_template` renders with a template chosen for it, and a model of an
unknown family gets ChatML (as llama.cpp does), whose tags a model trained on another format echoes into its
replies; the user must learn which template stands in and how to give the right one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from localspec.errors import ConfigError
from localspec.prompting import families
from localspec.prompting.jinja_env import compile_template


@dataclass(frozen=True)
class TemplateChoice:
    """Where a model's template comes from: "given" (the user's), "file" (the GGUF's own), "family" (the family
    the GGUF's architecture and tokens imply) or "fallback" (ChatML: no family fits); "unreadable" for a file that
    could not be read (file_template)."""

    source: str
    family: str | None = None  # the family's name (source "family"; "given" when the user named one)
    why: str = ""  # what gave the family away, or why none did

    def describe(self) -> str:
        """A few words for `models` and `doctor`."""
        if self.source == "file":
            return "the file's own"
        if self.source == "given":
            return f"the {self.family} family's (given)" if self.family else "given"
        if self.source == "family":
            return f"the {self.family} family's (the file has none; {self.why})"
        if self.source == "unreadable":
            return f"unknown ({self.why})"
        return f"ChatML fallback (the file has none and its family is unknown: {self.why})"

    def to_dict(self) -> dict:
        return {"source": self.source, "family": self.family, "why": self.why}


def fallback_warning(model_name: str, why: str = "") -> str:
    known = f" and its family is unknown ({why})" if why else ""
    return (f"{model_name} has no chat template{known}: using the ChatML fallback (<|im_start|>role … <|im_end|>). "
            "If replies show <|im_start|> or run on, give the model's own template with --chat-template "
            f"FAMILY|FILE (families: {families.names()}), or per pair in config.toml: localspec config set "
            "chat_templates.PAIR FAMILY|FILE")


def family_note(model_name: str, choice: TemplateChoice) -> str:
    return (f"{model_name} has no chat template: using the {choice.family} family's ({choice.why}); "
            "--chat-template FAMILY|FILE picks another")


def template_source(value: str) -> tuple[str, str | None]:
    """The Jinja text a `--chat-template` value names, and the family's name when it names one (a family's name
    that is not also a file here); ConfigError (one line) otherwise."""
    family = families.BY_NAME.get(value)
    path = Path(value).expanduser()
    if family is not None and not path.is_file():
        return family.template, family.name
    if family is None and not path.exists() and "/" not in value and "." not in value:  # a name, not a path
        raise ConfigError(f"chat template {value!r}: no such file, and no family of that name (families: "
                          f"{families.names()})")
    return read_template_file(value), None


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


def choose_template(model, given: str | None = None) -> tuple[str | None, TemplateChoice]:
    """The template `model` renders with (None: its own) and where it comes from (see the module's docstring)."""
    if given:
        text, family = template_source(given)
        return text, TemplateChoice("given", family)
    if model.chat_template:
        return None, TemplateChoice("file")
    found = families.detect(model)
    if found.family is None:
        return families.CHATML.template, TemplateChoice("fallback", None, found.why)
    return found.family.template, TemplateChoice("family", found.family.name, found.why)


def file_template(path: str | Path) -> TemplateChoice:
    """Which template a GGUF file renders with when none is given (its own, its family's or ChatML), read from its
    vocabulary alone (a fraction of a second: no weights); "unreadable" with the reason when it cannot be read."""
    from localspec.errors import LocalspecError
    from localspec.runtime.model import Model, ModelSettings

    try:
        model = Model(path, ModelSettings(vocab_only=True))
    except LocalspecError as exc:
        return TemplateChoice("unreadable", None, str(exc))
    try:
        return choose_template(model)[1]
    finally:
        model.close()


def apply_chat_template(model, given: str | None) -> str | None:
    """Give `model` its template: `given` (a family's name or a Jinja file) replaces the GGUF's own; a GGUF without
    one gets its family's. Returns the line to show when the file had none (which family stands in, or that ChatML
    does), else None."""
    text, choice = choose_template(model, given)
    if text is not None:
        model.chat_template = text  # Model.chat_template is a cached property: this replaces it
    name = Path(model.path).name
    if choice.source == "family":
        return family_note(name, choice)
    if choice.source == "fallback":
        return fallback_warning(name, choice.why)
    return None
