"""The drafters a user can pick: the one table that the engine builder, the command line (`--drafters`, its help,
the config fallback), the TUI's settings and the TUI's origin colours all read. Which candidate sources each one
switches on, and how each is built, is speculative/sources/table.py (one row per source).

    DRAFTERS              every drafter, in the order help, settings and defaults list them
    NAMES                 their names: what `--drafters` takes and what the builder accepts
    ORIGINS               every origin a token can report (TokenEvent.origin, Stats.drafters keys): TARGET first
    TARGET                the origin of the target's own tokens
    get(name)             one entry (ConfigError if unknown)
    parse_names(text)     "schema, ngram" / "none" -> ("schema", "ngram") (ConfigError on an unknown name)
    enabled(is_on)        the names whose config key is on, e.g. enabled(lambda key: settings.get(key))
    help_text()           "model, schema, history, ngram" for help lines
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

from localspec.errors import ConfigError

TARGET = "target"


@dataclass(frozen=True)
class DrafterInfo:
    name: str  # what --drafters and the builder take
    summary: str  # one line for --help and the settings screen
    origins: tuple[str, ...]  # the origins its tokens report (TokenEvent.origin, keys of Stats.drafters)
    config_key: str  # its on/off switch in the config file (settings/config_toml.py, section [drafters])


DRAFTERS: tuple[DrafterInfo, ...] = (
    DrafterInfo("model", "the pair's small draft model proposes tokens", ("model",), "drafters.model"),
    DrafterInfo("schema", "tool-call JSON the schema forces, its usual tokens, how values end, which tool",
                ("schema",), "drafters.schema"),
    DrafterInfo("history", "continuations of earlier tool calls (remembered across sessions)", ("history",),
                "drafters.history"),
    DrafterInfo("ngram", "text copied from the context: prompt lookup on tokens and text, spans of the request",
                ("ngram",), "drafters.ngram"),
    DrafterInfo("head", "the target's draft head: its own MTP layers, or an EAGLE-3 or DFlash file beside it",
                ("mtp", "eagle3", "dflash"), "drafters.head"),
)

NAMES: tuple[str, ...] = tuple(d.name for d in DRAFTERS)
ORIGINS: tuple[str, ...] = (TARGET,) + tuple(dict.fromkeys(o for d in DRAFTERS for o in d.origins))
_BY_NAME = {d.name: d for d in DRAFTERS}


def get(name: str) -> DrafterInfo:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ConfigError(f"unknown drafter {name!r}; choose from {help_text()}") from None


def check_names(names: Iterable[str]) -> tuple[str, ...]:
    """The names, in order, once each; ConfigError on the first unknown one."""
    out = tuple(dict.fromkeys(names))
    for n in out:
        get(n)
    return out


def parse_names(text: str) -> tuple[str, ...]:
    """A comma-separated list as `--drafters` takes it; 'none' (or nothing) means the target alone."""
    names = [n.strip() for n in text.split(",")]
    bad = next((n for n in names if n and n != "none" and n not in _BY_NAME), None)
    if bad is not None:
        raise ConfigError(f"unknown drafter {bad!r}; choose from {help_text()} or none")
    return tuple(n for n in names if n and n != "none")


def enabled(is_on: Callable[[str], object]) -> tuple[str, ...]:
    """The drafters whose config key is on, in table order; `is_on` looks a dotted key up ("drafters.ngram")."""
    return tuple(d.name for d in DRAFTERS if is_on(d.config_key))


def help_text() -> str:
    return ", ".join(NAMES)
