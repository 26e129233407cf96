"""`localspec run PROMPT`: one generation, headless, streamed or as one JSON object."""

from __future__ import annotations

import json
import math
import sys

from localspec.errors import ConfigError
from localspec.runtime.context import ContextSettings
from localspec.runtime.model import ModelSettings
from localspec.runtime.pair import load_pair
from localspec.speculative.builder import build_engine
from localspec.speculative.engine import GenParams
from localspec.speculative.sampling import SamplingParams


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
                   help="drafting sources, comma-separated: model, schema, history, ngram ('none': target only)")


def register(sub) -> None:
    p = sub.add_parser("run", help="generate once from a prompt (headless)")
    p.add_argument("prompt", metavar="PROMPT")
    add_model_args(p)
    add_generation_args(p)
    p.add_argument("--raw", action="store_true", help="feed the prompt as plain text, without the chat template")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of streaming")
    from localspec.commands.agent_run import add_agent_args

    add_agent_args(p)
    from localspec.remote.command import add_remote_args

    add_remote_args(p)
    p.set_defaults(func=cmd_run)


def apply_config(args, hints=None) -> None:
    """Flags left unset take config.toml's values (and the pair's tuning hints), then built-in defaults."""
    from localspec.models.config import load_config

    cfg = load_config()
    tuning = cfg.tuning(hints)
    sampling_set = cfg.sampling.model_fields_set  # only values the user really set change the greedy default
    fallback = {
        "draft_max": tuning.draft_max or 8, "draft_p_min": tuning.draft_p_min if tuning.draft_p_min is not None
        else 0.75,
        "temperature": cfg.sampling.temperature if "temperature" in sampling_set else 0.0,
        "top_k": cfg.sampling.top_k if "top_k" in sampling_set else 40,
        "top_p": cfg.sampling.top_p if "top_p" in sampling_set else 0.95,
        "min_p": cfg.sampling.min_p if "min_p" in sampling_set else 0.05,
        "seed": cfg.sampling.seed,
        "drafters": ",".join(n for n in ("model", "schema", "history", "ngram")
                             if cfg.get(f"drafters.{n}")) or "none",
        "n_gpu_layers": tuning.target_gpu_layers, "draft_n_gpu_layers": tuning.draft_gpu_layers,
    }
    for name, value in fallback.items():
        if getattr(args, name, None) is None:
            setattr(args, name, value)


def validate_args(args) -> None:
    apply_config(args, getattr(args, "_hints", None))  # fills only what no flag set (an explicit --drafters too)
    if args.draft and args.no_draft:
        raise ConfigError("--draft and --no-draft contradict each other")
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
    if args.draft and args.no_draft:
        raise ConfigError("--draft and --no-draft contradict each other")
    if args.target:
        if getattr(args, "pair", None):
            raise ConfigError("give --pair or --target, not both")
        return args.target, (None if args.no_draft else args.draft)
    from localspec.models.resolve import resolve_selection

    sel = resolve_selection(getattr(args, "pair", None), None, args.draft, offline=getattr(args, "offline", False))
    args._hints = sel.hints  # the pair's tuning hints feed the defaults of unset flags
    return str(sel.target), (None if args.no_draft or sel.draft is None else str(sel.draft))


def load_from_args(args):
    target, draft = resolve_paths(args)
    validate_args(args)
    ctx = ContextSettings(n_ctx=args.ctx_size, n_threads=args.threads, flash_attn=args.flash_attn)
    return load_pair(target, draft,
                     target=ModelSettings(n_gpu_layers=_gpu(args.n_gpu_layers)),
                     draft=ModelSettings(n_gpu_layers=_gpu(args.draft_n_gpu_layers)), ctx=ctx)


def _gpu(n: int | None) -> int:
    if n is not None:
        return n
    from localspec.runtime.backend import backend_info

    return -1 if backend_info()["gpu_offload"] else 0  # offload everything when the build can


def gen_params(args) -> GenParams:
    sampling = SamplingParams(temperature=args.temperature, top_k=args.top_k, top_p=args.top_p, min_p=args.min_p,
                              seed=args.seed)
    return GenParams(max_tokens=args.max_tokens, sampling=sampling, stop=tuple(args.stop))


def parse_drafters(text: str) -> tuple[str, ...]:
    from localspec.speculative.builder import DRAFTERS

    names = tuple(n.strip() for n in text.split(",") if n.strip() and n.strip() != "none")
    bad = [n for n in names if n not in DRAFTERS]
    if bad:
        raise ConfigError(f"unknown drafter {bad[0]!r}; choose from {', '.join(DRAFTERS)} or none")
    return names


def engine_from_args(args, pair):
    """The engine every headless command uses: the chosen drafters, with tool-call history persisted per user."""
    drafters = () if args.no_draft else parse_drafters(args.drafters)
    history = None
    if "history" in drafters:
        from localspec.models.paths import get_paths
        from localspec.speculative.drafters.history import CallHistory

        history = CallHistory(get_paths().data_dir / "history" / "tool_calls.jsonl")
    return build_engine(pair, use_draft_model=not args.no_draft, draft_max=args.draft_max,
                        draft_p_min=args.draft_p_min, drafters=drafters, history=history)


def prompt_tokens(model, prompt: str, raw: bool) -> list[int]:
    if raw:
        return model.tokenize(prompt)
    from localspec.chat.prompt import chat_prompt_tokens

    return chat_prompt_tokens(model, [{"role": "user", "content": prompt}])


def cmd_run(args) -> int:
    if getattr(args, "backend", "local") == "openai":
        from localspec.remote.command import cmd_remote_run

        return cmd_remote_run(args)
    if getattr(args, "tools", False):
        from localspec.commands.agent_run import cmd_agent_run

        return cmd_agent_run(args)
    pair = load_from_args(args)
    engine = engine_from_args(args, pair)
    tokens = prompt_tokens(pair.target, args.prompt, args.raw)
    params = gen_params(args)
    if args.json:
        gen = engine.generate(tokens, params)
        print(json.dumps({"text": gen.text, "stats": gen.stats.to_dict(),
                          "target": str(pair.target.path), "draft": str(pair.draft.path) if pair.draft else None}))
        return 0
    for ev in engine.stream(tokens, params):
        if ev.text:
            sys.stdout.write(ev.text)
            sys.stdout.flush()
    sys.stdout.write("\n")
    print(f"[{engine.last_stats.summary()}]", file=sys.stderr)
    return 0
