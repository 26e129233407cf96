"""What every command that runs a model shares: its flags, config fallbacks, loading the pair, building the engine.

The commands (run, run --tools, serve) import this module and never each other, so imports point one way:
cli -> commands/<command> -> commands/helpers -> the layers below. The model stack (llama.cpp, the engine) is
imported inside the functions that need it, so `localspec models` or `--help` never pays for loading it.
"""

from __future__ import annotations

import math

from localspec.errors import ConfigError
from localspec.speculative import registry


def add_model_args(p) -> None:
    """Model and runtime flags shared by every command that runs a model."""
    p.add_argument("--pair", metavar="NAME", help="installed model pair (default: the configured one)")
    p.add_argument("--offline", action="store_true", help="use local files only (like HF_HUB_OFFLINE=1)")
    p.add_argument("--target", metavar="PATH", help="target GGUF (the model whose output you get)")
    p.add_argument("--draft", metavar="PATH", help="draft GGUF with the target's vocabulary")
    p.add_argument("--no-draft", action="store_true", help="target-only decoding: no draft model and no other drafter")
    p.add_argument("--n-gpu-layers", type=int, default=None, metavar="N", help="target layers to offload (-1: all)")
    p.add_argument("--draft-n-gpu-layers", type=int, default=None, metavar="N", help="draft layers to offload")
    p.add_argument("--ctx-size", type=int, default=4096, metavar="N", help="context window in tokens")
    p.add_argument("--threads", type=int, default=0, metavar="N", help="CPU threads (0: one per core)")
    p.add_argument("--flash-attn", choices=("auto", "on", "off"), default="auto")
    p.add_argument("--chat-template", metavar="FILE", default=None,
                   help="Jinja chat template to use instead of the GGUF's own (default: config.toml "
                        "chat_templates.<pair>; a GGUF without one falls back to ChatML, with a warning)")


def add_generation_args(p) -> None:
    p.add_argument("--draft-max", type=int, default=None, metavar="K",
                   help="most tokens the draft model proposes per step (default: config, pair hint, 8)")
    p.add_argument("--draft-p-min", type=float, default=None, metavar="P",
                   help="stop drafting when the draft model's top probability falls below P")
    p.add_argument("--max-tokens", type=int, default=256, metavar="N")
    p.add_argument("--temperature", type=float, default=None, metavar="T",
                   help="0 = greedy (default: 0, or sampling.temperature when set in config.toml)")
    p.add_argument("--top-k", type=int, default=None)
    p.add_argument("--top-p", type=float, default=None)
    p.add_argument("--min-p", type=float, default=None)
    p.add_argument("--seed", type=int, default=None, metavar="S")
    p.add_argument("--stop", action="append", default=[], metavar="TEXT", help="stop string (repeatable)")
    p.add_argument("--drafters", default=None, metavar="LIST",
                   help=f"drafting sources, comma-separated: {registry.help_text()} ('none': target only)")


def apply_config(args, hints=None) -> None:
    """Flags left unset take config.toml's values (and the pair's tuning hints), then built-in defaults."""
    from localspec.models.config import load_config

    cfg = load_config()
    tuning = cfg.tuning(hints)
    fallback = {
        "draft_max": tuning.draft_max or 8, "draft_p_min": tuning.draft_p_min if tuning.draft_p_min is not None
        else 0.75,
        # config.toml's sampling values (models/config.py holds the defaults every entry point shares)
        "temperature": cfg.sampling.temperature, "top_k": cfg.sampling.top_k, "top_p": cfg.sampling.top_p,
        "min_p": cfg.sampling.min_p,
        "seed": cfg.sampling.seed,
        "thinking": cfg.reasoning.thinking,
        "drafters": ",".join(registry.enabled(cfg.get)) or "none",
        "n_gpu_layers": tuning.target_gpu_layers, "draft_n_gpu_layers": tuning.draft_gpu_layers,
    }
    for name, value in fallback.items():
        if getattr(args, name, None) is None:
            setattr(args, name, value)


def validate_args(args) -> None:
    """Config fills what no flag set (an explicit --drafters too), then every number is range-checked."""
    apply_config(args, getattr(args, "_hints", None))
    checks = [  # flag, value, ok, what it must be
        ("--max-tokens", args.max_tokens, lambda v: v >= 1, ">= 1"),
        ("--draft-max", args.draft_max, lambda v: v >= 0, ">= 0"),
        ("--draft-p-min", args.draft_p_min, lambda v: 0.0 <= v <= 1.0, "between 0 and 1"),
        ("--temperature", args.temperature, lambda v: 0.0 <= v < math.inf, "a number >= 0"),
        ("--top-k", args.top_k, lambda v: v >= 0, ">= 0 (0 disables)"),
        ("--top-p", args.top_p, lambda v: 0.0 < v <= 1.0, "in (0, 1]"),
        ("--min-p", args.min_p, lambda v: 0.0 <= v <= 1.0, "between 0 and 1"),
        ("--seed", args.seed, lambda v: v is None or 0 <= v < 2**63, "a non-negative integer"),
        ("--threads", args.threads, lambda v: v >= 0, ">= 0 (0: one per core)"),
        ("--ctx-size", args.ctx_size, lambda v: v >= 16, ">= 16"),
    ]
    for flag, value, ok, want in checks:
        if isinstance(value, float) and math.isnan(value) or not ok(value):
            raise ConfigError(f"{flag} must be {want}, not {value}")


def resolve_paths(args) -> tuple[str, str | None]:
    """Explicit --target/--draft win; otherwise the configured or default pair (models package)."""
    if args.draft and args.no_draft:  # before resolving: a pair lookup must not hide the contradiction
        raise ConfigError("--draft and --no-draft contradict each other")
    if args.target:
        if getattr(args, "pair", None):
            raise ConfigError("give --pair or --target, not both")
        return args.target, (None if args.no_draft else args.draft)
    from localspec.models.resolve import resolve_selection

    sel = resolve_selection(getattr(args, "pair", None), None, args.draft, offline=getattr(args, "offline", False))
    args._hints = sel.hints  # the pair's tuning hints feed the defaults of unset flags
    args._pair = sel.pair  # its config.toml chat template, if any
    return str(sel.target), (None if args.no_draft or sel.draft is None else str(sel.draft))


def load_from_args(args):
    """The LoadedPair the flags (or config and the default pair) name, with its runtime settings."""
    from localspec.runtime.context import ContextSettings
    from localspec.runtime.model import ModelSettings
    from localspec.runtime.pair import load_pair

    target, draft = resolve_paths(args)
    validate_args(args)
    ctx = ContextSettings(n_ctx=args.ctx_size, n_threads=args.threads, flash_attn=args.flash_attn)
    pair = load_pair(target, draft,
                     target=ModelSettings(n_gpu_layers=_gpu(args.n_gpu_layers)),
                     draft=ModelSettings(n_gpu_layers=_gpu(args.draft_n_gpu_layers)), ctx=ctx)
    try:
        _chat_template(args, pair.target)
    except BaseException:
        pair.close()
        raise
    return pair


def _chat_template(args, model) -> None:
    """--chat-template, else config.toml's chat_templates.<pair>; warn on stderr when ChatML stands in."""
    import sys

    from localspec.chat.template_file import apply_chat_template
    from localspec.models.config import load_config

    path = getattr(args, "chat_template", None)
    pair = getattr(args, "_pair", None)
    if not path and pair:
        path = load_config().chat_templates.get(pair)
    warning = apply_chat_template(model, path)
    if warning and not getattr(args, "raw", False):
        print(f"warning: {warning}", file=sys.stderr)


def _gpu(n: int | None) -> int:
    if n is not None:
        return n
    from localspec.runtime.backend import backend_info

    return -1 if backend_info()["gpu_offload"] else 0  # offload everything when the build can


def gen_params(args):
    """GenParams from the (validated) generation flags."""
    from localspec.speculative.engine import GenParams
    from localspec.speculative.sampling import SamplingParams

    sampling = SamplingParams(temperature=args.temperature, top_k=args.top_k, top_p=args.top_p, min_p=args.min_p,
                              seed=args.seed)
    return GenParams(max_tokens=args.max_tokens, sampling=sampling, stop=tuple(args.stop))


def engine_from_args(args, pair):
    """The engine every headless command uses: the chosen drafters, with tool-call history persisted per user."""
    from localspec.speculative.builder import build_engine
    from localspec.speculative.config import DraftingConfig

    drafters = () if args.no_draft else registry.parse_names(args.drafters)
    from localspec.agent.history import call_history

    history = call_history() if "history" in drafters else None
    return build_engine(pair, DraftingConfig(drafters=drafters, draft_max=args.draft_max,
                                             draft_p_min=args.draft_p_min), history=history)
