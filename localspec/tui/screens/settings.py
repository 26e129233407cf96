"""The settings screen (Textual): this conversation's own settings, then every config.toml key as a form field,
validated before anything is saved.

"This conversation" (system prompt, temperature, max tokens) applies to the open chat only, from its next message.
The config form is built from the Settings model itself (switches for booleans, choices for fixed sets, text for
the rest), so a new setting appears here without UI code. It edits the file's values, not LOCALSPEC_* environment
overrides; the file's [chat_templates] table, which has no form fields, is kept as it is.
"""

from __future__ import annotations

import types
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Input, Label, Select, Static, Switch, TextArea

from localspec.errors import LocalspecError
from localspec.settings.config_toml import TABLES, Settings, config_keys, load_config, save_config
from localspec.speculative import names as registry
from localspec.terminal import display_text, safe_text
from localspec.tui.host import host
from localspec.tui.widgets.top_bar import short_path
from localspec.tui.shown import line, note

HELP = {
    "default_pair": "pair used when none is given (empty: first installed)",
    "target_gpu_layers": "target layers on the GPU (-1 all; empty: pair hint)",
    "draft_gpu_layers": "draft layers on the GPU (-1 all; empty: pair hint)",
    "draft_max": "most tokens drafted per step (empty: pair hint)",
    "draft_p_min": "stop drafting below this draft probability (empty: pair hint)",
    "ctx_size": "context window in tokens (empty: 8192, or what the model was trained on); saving reloads the pair",
    "threads": "CPU threads (empty or 0: one per core, but one for the app); saving reloads the pair",
    "approval": "ask: writes and shell need approval · read-only · auto: run everything",
    "theme": "colour theme of this app",
    "sampling.temperature": "0: greedy (exactly the target's own output); higher: more varied",
    "sampling.seed": "empty: random",
    "reasoning.thinking": "reasoning models think before answering (Ctrl+R switches it in the chat)",
    "tools.enabled": "new chats offer the tools to the model (F6 switches this chat's)",
    "backend.kind": "local: llama.cpp here · openai: an OpenAI-compatible server (the URL below)",
    "backend.base_url": "the server's API root, e.g. http://localhost:8080/v1",
    "backend.model": "model name on the server (empty: the first it lists)",
    "backend.api_key": "bearer token for the server (empty: none, or OPENAI_API_KEY)",
    **{d.config_key: d.summary for d in registry.DRAFTERS},
}
MAX_TOKENS_LIMIT = 1_000_000


class ConversationError(ValueError):
    """A field of "This conversation" that cannot be used (the message names the field)."""


def _started_with(flag, flag_name: str, otherwise, source: str) -> str:
    """An empty field's hint: the value it stands for, and where that comes from (a flag the app was started with, or
    the settings' or the app's default)."""
    return f"{flag} ({flag_name})" if flag is not None else f"{otherwise} ({source})"


def conversation_values(system: str, temperature: str, max_tokens: str) -> tuple[str, float | None, int | None]:
    """The "This conversation" fields as the session takes them; empty numbers mean the defaults."""
    temp = None
    if temperature.strip():
        try:
            temp = float(temperature)
        except ValueError:
            raise ConversationError(f"temperature: {temperature.strip()!r} is not a number") from None
        if not 0.0 <= temp <= 5.0:
            raise ConversationError("temperature: must be between 0 and 5")
    limit = None
    if max_tokens.strip():
        try:
            limit = int(max_tokens)
        except ValueError:
            raise ConversationError(f"max tokens: {max_tokens.strip()!r} is not a whole number") from None
        if not 1 <= limit <= MAX_TOKENS_LIMIT:
            raise ConversationError(f"max tokens: must be between 1 and {MAX_TOKENS_LIMIT:,}")
    return system.strip(), temp, limit


def _unwrap(annotation: Any) -> tuple[Any, bool]:
    """(base type, optional) of a field annotation: strips Annotated[...] and `| None`."""
    optional = False
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation = get_args(annotation)[0]
        elif origin in (Union, types.UnionType):
            args = [a for a in get_args(annotation) if a is not type(None)]
            optional = optional or len(args) < len(get_args(annotation))
            annotation = args[0] if len(args) == 1 else annotation
            if len(args) != 1:
                return annotation, optional
        else:
            return annotation, optional


def field_annotation(key: str) -> Any:
    section, _, name = key.rpartition(".")
    model: type[BaseModel] = Settings
    if section:
        model = _unwrap(Settings.model_fields[section].annotation)[0]
    for attr, info in model.model_fields.items():
        if name in (attr, info.alias):
            return info.annotation
    raise KeyError(key)


def widget_id(key: str) -> str:
    return "cfg-" + key.replace(".", "-")


class SettingsScreen(Screen):
    BINDINGS = [
        Binding("ctrl+s", "save", "Save"),
        Binding("escape", "close", "Back"),
    ]

    def __init__(self) -> None:
        super().__init__(id="settings")

    def compose(self) -> ComposeResult:
        try:
            current = load_config(host(self).session.options.config_path, apply_env=False)
        except LocalspecError as exc:
            current = Settings()
            self.app.notify(note(f"{exc}; showing the defaults"), severity="error", markup=False)
        self._tables = {t: getattr(current, t) for t in TABLES}  # no form fields: saved back as they are
        session = host(self).session
        yield Label("Settings  (Ctrl+S saves both parts, Esc goes back)", classes="heading")
        yield Static("", id="settings-error")
        with VerticalScroll(id="settings-form"):
            yield Label("This conversation (from its next message)", classes="heading")
            with Horizontal(classes="setting"):
                yield Label("system prompt", classes="key")
                # A resumed conversation's stored prompt: shown (and saved) with control characters escaped.
                yield TextArea(display_text(session.system_prompt or ""), id="conv-system", soft_wrap=True,
                               tab_behavior="focus")
            flags = session.options.flags  # what the app was started with wins over the settings
            with Horizontal(classes="setting"):
                yield Label("temperature", classes="key")
                yield Input("" if session.temperature is None else str(session.temperature), id="conv-temperature",
                            placeholder=_started_with(flags.temperature, "--temperature",
                                                      session.settings.sampling.temperature, "config"))
                yield Label("empty: sampling.temperature below", classes="help")
            with Horizontal(classes="setting"):
                yield Label("max tokens", classes="key")
                yield Input("" if session.max_tokens_override is None else str(session.max_tokens_override),
                            id="conv-max-tokens", placeholder=_started_with(flags.max_tokens, "--max-tokens",
                                                                            session.options.max_tokens, "default"))
                yield Label("most tokens per reply; raise it when replies stop at the token limit", classes="help")
            yield Label(line(f"config.toml · {short_path(self._path())}"), classes="heading")
            for key in config_keys():
                with Horizontal(classes="setting"):
                    yield Label(key, classes="key")
                    yield self._field(key, current.get(key))
                    yield Label(HELP.get(key, ""), classes="help")
        yield Footer()

    def _path(self):
        from localspec.settings.config_toml import config_path

        return host(self).session.options.config_path or config_path()

    def _field(self, key: str, value: Any):
        base, _ = _unwrap(field_annotation(key))
        wid = widget_id(key)
        if base is bool:
            return Switch(value=bool(value), id=wid)
        if key == "theme":
            names = sorted(self.app.available_themes)
            options = [(n, n) for n in ([value] if value not in names else []) + names]
            return Select(options, value=value, allow_blank=False, id=wid)
        if get_origin(base) is Literal:
            return Select([(str(v), v) for v in get_args(base)], value=value, allow_blank=False, id=wid)
        return Input("" if value is None else safe_text(value), id=wid, placeholder="(default)")

    def values(self) -> dict[str, Any]:
        """The form as a nested raw dict, as config.toml would hold it (empty text fields left out)."""
        raw: dict[str, Any] = {}
        for key in config_keys():
            w = self.query_one("#" + widget_id(key))
            assert isinstance(w, (Switch, Select, Input))  # the fields _field makes
            value = w.value
            if isinstance(w, Input):
                value = w.value.strip()
                if not value:
                    continue
            section, _, name = key.rpartition(".")
            (raw.setdefault(section, {}) if section else raw)[name] = value
        return raw

    def conversation(self) -> tuple[str, float | None, int | None]:
        return conversation_values(self.query_one("#conv-system", TextArea).text,
                                   self.query_one("#conv-temperature", Input).value,
                                   self.query_one("#conv-max-tokens", Input).value)

    def action_save(self) -> None:
        error = self.query_one("#settings-error", Static)
        try:
            system, temperature, max_tokens = self.conversation()
        except ConversationError as exc:
            error.update(line(f"not saved: {exc}"))
            error.display = True
            return
        try:
            settings = Settings.model_validate({**self.values(), **self._tables})
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            error.update(line(f"not saved: {where}: {first['msg']}"))
            error.display = True
            return
        try:
            save_config(settings, host(self).session.options.config_path)
            host(self).session.set_conversation_settings(system_prompt=system, temperature=temperature,
                                                         max_tokens=max_tokens)
            host(self).reload_settings()
        except (LocalspecError, OSError) as exc:
            error.update(line(f"not saved: {exc}"))
            error.display = True
            return
        error.display = False
        self.notify("settings saved (a changed context size, threads or drafters reload the pair now)", timeout=3)
        self.dismiss()

    def action_close(self) -> None:
        self.dismiss()
