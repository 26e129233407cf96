"""The settings screen (Textual): every config.toml key as a form field, validated before it is saved.

The form is built from the Settings model itself (switches for booleans, choices for fixed sets, text for the rest),
so a new setting appears here without UI code. It edits the file's values, not LOCALSPEC_* environment overrides.
"""

from __future__ import annotations

import types
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Input, Label, Select, Static, Switch

from localspec.errors import LocalspecError
from localspec.models.config import Settings, config_keys, load_config, save_config

HELP = {
    "default_pair": "pair used when none is given (empty: first installed)",
    "target_gpu_layers": "target layers on the GPU (-1 all; empty: pair hint)",
    "draft_gpu_layers": "draft layers on the GPU (-1 all; empty: pair hint)",
    "draft_max": "most tokens drafted per step (empty: pair hint)",
    "draft_p_min": "stop drafting below this draft probability (empty: pair hint)",
    "approval": "ask: writes and shell need approval · read-only · auto: run everything",
    "theme": "colour theme of this app",
    "sampling.seed": "empty: random",
}


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
            current = load_config(self.app.session.options.config_path, apply_env=False)
        except LocalspecError as exc:
            current = Settings()
            self.app.notify(f"{exc}; showing the defaults", severity="error")
        yield Label(f"Settings · {self._path()}  (Ctrl+S saves, Esc goes back)", classes="heading")
        yield Static("", id="settings-error")
        with VerticalScroll(id="settings-form"):
            for key in config_keys():
                with Horizontal(classes="setting"):
                    yield Label(key, classes="key")
                    yield self._field(key, current.get(key))
                    yield Label(HELP.get(key, ""), classes="help")
        yield Footer()

    def _path(self):
        from localspec.models.config import config_path

        return self.app.session.options.config_path or config_path()

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
        return Input("" if value is None else str(value), id=wid, placeholder="(default)")

    def values(self) -> dict[str, Any]:
        """The form as a nested raw dict, as config.toml would hold it (empty text fields left out)."""
        raw: dict[str, Any] = {}
        for key in config_keys():
            w = self.query_one("#" + widget_id(key))
            value = w.value
            if isinstance(w, Input):
                value = value.strip()
                if not value:
                    continue
            section, _, name = key.rpartition(".")
            (raw.setdefault(section, {}) if section else raw)[name] = value
        return raw

    def action_save(self) -> None:
        error = self.query_one("#settings-error", Static)
        try:
            settings = Settings.model_validate(self.values())
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            error.update(f"not saved: {where}: {first['msg']}")
            error.display = True
            return
        try:
            save_config(settings, self.app.session.options.config_path)
            self.app.reload_settings()
        except (LocalspecError, OSError) as exc:
            error.update(f"not saved: {exc}")
            error.display = True
            return
        error.display = False
        self.notify("settings saved; model settings apply when a pair is next loaded", timeout=3)
        self.dismiss()

    def action_close(self) -> None:
        self.dismiss()
