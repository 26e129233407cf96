"""One frozen RunConfig from the user's flags, config.toml and the pair's tuning hints: the only place where the
three meet, so that `run`, `serve`, the app and the bench resolve the same choice to the same value.

Order for every setting: the flag, then config.toml (with its LOCALSPEC_* overrides), then the pair's hint, then the
default below.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from localspec.errors import ConfigError
from localspec.launch.flags import RunFlags
from localspec.launch.resolve import check_head, resolve_selection
from localspec.models.selection import Selection
from localspec.runtime.context import ContextSettings, default_threads
from localspec.runtime.model import ModelSettings
from localspec.settings.config_toml import Settings, load_config
from localspec.speculative import DRAFT_MAX, DRAFT_P_MIN, DraftingConfig, GenParams, SamplingParams
from localspec.speculative import names as registry

CTX_SIZE = 8192  # tokens; llama.cpp keeps it within what the model was trained on
MAX_TOKENS = 256  # per reply, where the front end has no default of its own
APP_MAX_TOKENS = 1024  # per model turn in the app, unless --max-tokens says otherwise (a chat allows longer replies)
FLASH_ATTN = "auto"


@dataclass(frozen=True)
class RunConfig:
    selection: Selection  # which files: target, draft, the pair's name and hints
    target: ModelSettings
    draft: ModelSettings
    context: ContextSettings
    drafting: DraftingConfig
    params: GenParams  # the defaults of every generation: max_tokens, sampling, stop strings
    chat_template: str | None  # a Jinja file replacing the GGUF's own template
    thinking: bool  # reasoning models think before answering
    prefix_cache: bool = True  # save prompt prefixes (system prompt + tools) to disk and restore them

    @property
    def pair(self) -> str | None:
        return self.selection.pair


def interactive_threads(cores: int | None = None) -> int:
    """llama.cpp threads for the app: all cores but one (at most 8). Why: llama.cpp's threads busy-wait for each
    other; with one per core they compete with the UI thread and the Python thread driving the engine, and on a
    small, busy machine a generation measured 40x slower and the UI stalled for 100+ ms. Leaving one core free kept
    stalls near 20 ms on 2 cores."""
    import os

    return max(1, min(8, (cores or os.cpu_count() or 2) - 1))


def select(flags: RunFlags, settings: Settings) -> Selection:
    """The model files the flags (or config and the installed pairs) name; never downloads."""
    if flags.draft and flags.no_draft:  # before resolving: a pair lookup must not hide the contradiction
        raise ConfigError("--draft and --no-draft contradict each other")
    if flags.target and flags.pair:
        raise ConfigError("give --pair or --target, not both")
    sel = resolve_selection(flags.pair, flags.target, flags.draft, offline=flags.offline, settings=settings)
    if flags.head:
        sel = replace(sel, head=check_head(flags.head))
    return replace(sel, draft=None) if flags.no_draft else sel


def check_flags(flags: RunFlags) -> None:
    """A one-line error for the first flag whose value is out of range."""
    checks = [  # flag, value, ok, what it must be
        ("--max-tokens", flags.max_tokens, lambda v: v >= 1, ">= 1"),
        ("--draft-max", flags.draft_max, lambda v: v >= 0, ">= 0"),
        ("--draft-p-min", flags.draft_p_min, lambda v: 0.0 <= v <= 1.0, "between 0 and 1"),
        ("--temperature", flags.temperature, lambda v: 0.0 <= v < math.inf, "a number >= 0"),
        ("--top-k", flags.top_k, lambda v: v >= 0, ">= 0 (0 disables)"),
        ("--top-p", flags.top_p, lambda v: 0.0 < v <= 1.0, "in (0, 1]"),
        ("--min-p", flags.min_p, lambda v: 0.0 <= v <= 1.0, "between 0 and 1"),
        ("--seed", flags.seed, lambda v: 0 <= v < 2**63, "a non-negative integer"),
        ("--threads", flags.threads, lambda v: v >= 0, ">= 0 (0: one per core)"),
        ("--ctx-size", flags.ctx_size, lambda v: v >= 16, ">= 16"),
        ("--n-gpu-layers", flags.n_gpu_layers, lambda v: v >= -1, ">= -1 (-1: all)"),
        ("--draft-n-gpu-layers", flags.draft_n_gpu_layers, lambda v: v >= -1, ">= -1 (-1: all)"),
    ]
    for flag, value, ok, want in checks:
        if value is None:
            continue
        if isinstance(value, float) and math.isnan(value) or not ok(value):
            raise ConfigError(f"{flag} must be {want}, not {value}")
    if flags.flash_attn not in (None, "auto", "on", "off"):
        raise ConfigError(f"--flash-attn must be auto, on or off, not {flags.flash_attn}")


def _first(*values):
    return next((v for v in values if v is not None), None)


def resolve_config(flags: RunFlags = RunFlags(), settings: Settings | None = None, *,
                   selection: Selection | None = None, interactive: bool = False,
                   max_tokens: int = MAX_TOKENS) -> RunConfig:
    """The RunConfig for `flags`. `selection` overrides which files (the app's models screen picks them);
    `interactive` leaves a core free for the UI unless threads are set; `max_tokens` is the front end's default
    reply length (a chat allows longer replies than a one-off `run`)."""
    check_flags(flags)
    settings = settings or load_config()
    sel = selection or select(flags, settings)
    tuning = settings.tuning(sel.hints)
    if flags.drafters is not None:
        names = registry.parse_names(flags.drafters)
    else:
        names = registry.enabled(settings.get)
    drafting = DraftingConfig(drafters=() if flags.no_draft else names,
                              draft_max=_first(flags.draft_max, tuning.draft_max, DRAFT_MAX),
                              draft_p_min=_first(flags.draft_p_min, tuning.draft_p_min, DRAFT_P_MIN),
                              mtp=not flags.no_mtp and bool(settings.get("drafters.mtp")))
    params, thinking = resolve_params(flags, settings, max_tokens=max_tokens)
    threads = _first(flags.threads, settings.threads, 0)
    if not threads:
        threads = interactive_threads() if interactive else default_threads()
    context = ContextSettings(n_ctx=_first(flags.ctx_size, settings.ctx_size, CTX_SIZE), n_threads=threads,
                              flash_attn=flags.flash_attn or FLASH_ATTN)
    return RunConfig(
        selection=sel,
        target=ModelSettings(n_gpu_layers=_first(flags.n_gpu_layers, tuning.target_gpu_layers)),
        draft=ModelSettings(n_gpu_layers=_first(flags.draft_n_gpu_layers, tuning.draft_gpu_layers)),
        context=context, drafting=drafting,
        params=params, chat_template=flags.chat_template or settings.chat_templates.get(sel.pair or ""),
        thinking=thinking)


def resolve_params(flags: RunFlags = RunFlags(), settings: Settings | None = None, *,
                   max_tokens: int = MAX_TOKENS) -> tuple[GenParams, bool]:
    """The generation defaults (token limit, sampling, stop strings) and the thinking switch: what a turn asks
    for whichever backend runs it (a remote server gets the same; launch/backend_choice.py)."""
    check_flags(flags)
    settings = settings or load_config()
    s = settings.sampling
    sampling = SamplingParams(temperature=_first(flags.temperature, s.temperature),
                              top_k=_first(flags.top_k, s.top_k), top_p=_first(flags.top_p, s.top_p),
                              min_p=_first(flags.min_p, s.min_p), seed=_first(flags.seed, s.seed))
    params = GenParams(max_tokens=_first(flags.max_tokens, max_tokens), sampling=sampling, stop=tuple(flags.stop))
    return params, _first(flags.thinking, settings.reasoning.thinking)
