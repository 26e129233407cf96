"""The model, drafting and sampling flags every command that runs a model shares (and the app: `localspec` alone),
and the one place where an argparse Namespace becomes a RunFlags (launch/flags.py). Below this module nothing sees
the Namespace: the flags are resolved once (launch/run_config.py) and opened once (launch/open.py).

The commands (run, run --tools, serve, bench, the app) import this module and never each other, so imports point one
way: cli -> commands/<command> -> commands/helpers -> the layers below. The model stack (llama.cpp, the engine) is
imported inside the functions that need it, so `localspec models` or `--help` never pays for loading it.
"""

from __future__ import annotations

import argparse
from typing import Any

from localspec.speculative import names as registry

# The app's options live on the main parser (beside the subcommands' own --target, --pair, ...), so their
# destinations carry this prefix there.
APP_PREFIX = "tui_"


def flag_adder(p, prefix: str, suppress: bool):
    """p.add_argument with `prefix` on the destination, and (top level) SUPPRESS as every default, so that a
    subcommand's namespace holds these names only when the user gave them."""
    def add(*names, dest: str, **kw):
        if suppress:
            kw["default"] = argparse.SUPPRESS
        p.add_argument(*names, dest=prefix + dest, **kw)
    return add


def add_model_args(p, *, prefix: str = "", suppress: bool = False, choose_pair: bool = True) -> None:
    """Model and runtime flags shared by every command that runs a model."""
    add = flag_adder(p, prefix, suppress)
    if choose_pair:
        which = p.add_mutually_exclusive_group() if prefix else p
        flag_adder(which, prefix, suppress)("--pair", dest="pair", metavar="NAME",
                                        help="installed model pair (default: the configured one)")
        flag_adder(which, prefix, suppress)("--target", dest="target", metavar="PATH",
                                        help="target GGUF (the model whose output you get)")
        add("--draft", dest="draft", metavar="PATH",
            help="draft GGUF: the target's family, or another (it then drafts through text); or a draft head for the "
                 "target (EAGLE-3, DFlash, mtp-*.gguf): told apart by the file")
        add("--head", dest="head", metavar="PATH",
            help="a draft head for the target (EAGLE-3, DFlash, mtp-*.gguf), beside a --draft model or alone")
        add("--offline", dest="offline", action="store_true", help="use local files only (like HF_HUB_OFFLINE=1)")
    add("--no-draft", dest="no_draft", action="store_true",
        help="target-only decoding: no draft model and no other drafter")
    add("--no-mtp", dest="no_mtp", action="store_true",
        help="do not draft with the target's own MTP layers (nor load them; config: drafters.mtp = false)")
    add("--n-gpu-layers", dest="n_gpu_layers", type=int, default=None, metavar="N",
        help="target layers to offload to the GPU (-1: all; default: all where the build can)")
    add("--draft-n-gpu-layers", dest="draft_n_gpu_layers", type=int, default=None, metavar="N",
        help="draft layers to offload (default: as the target)")
    add("--ctx-size", dest="ctx_size", type=int, default=None, metavar="N",
        help="context window in tokens (default: config.toml ctx_size, else 8192)")
    add("--threads", dest="threads", type=int, default=None, metavar="N",
        help="CPU threads (0: one per core; default: config.toml threads)")
    add("--flash-attn", dest="flash_attn", choices=("auto", "on", "off"), default=None)
    add("--chat-template", dest="chat_template", metavar="FAMILY|FILE", default=None,
        help="a template family (gemma, llama3, chatml, qwen3, mistral-v7, ...) or a Jinja file, instead of the "
             "GGUF's own (default: config.toml chat_templates.<pair>; a GGUF without one gets the family its "
             "architecture and tokens imply, else ChatML, and says which)")


def add_generation_args(p, *, prefix: str = "", suppress: bool = False, max_tokens: int = 256) -> None:
    add = flag_adder(p, prefix, suppress)
    add("--draft-max", dest="draft_max", type=int, default=None, metavar="K",
        help="most tokens the draft model proposes per step (default: config, pair hint, 8)")
    add("--draft-p-min", dest="draft_p_min", type=float, default=None, metavar="P",
        help="stop drafting when the draft model's top probability falls below P (default: config, pair hint, "
             "0.75)")
    add("--max-tokens", dest="max_tokens", type=int, default=max_tokens, metavar="N",
        help=f"most tokens in a reply (default {max_tokens})")
    add("--temperature", dest="temperature", type=float, default=None, metavar="T",
        help="0 = greedy (default: 0, or sampling.temperature when set in config.toml)")
    add("--top-k", dest="top_k", type=int, default=None, metavar="K")
    add("--top-p", dest="top_p", type=float, default=None, metavar="P")
    add("--min-p", dest="min_p", type=float, default=None, metavar="P")
    add("--seed", dest="seed", type=int, default=None, metavar="S")
    add("--stop", dest="stop", action="append", default=[], metavar="TEXT", help="stop string (repeatable)")
    add("--drafters", dest="drafters", default=None, metavar="LIST",
        help=f"drafting sources, comma-separated: {registry.help_text()} ('none': target only)")


def add_thinking_args(p, *, prefix: str = "", suppress: bool = False) -> None:
    """The thinking switch of reasoning models (Qwen3, QwQ, DeepSeek-R1: <think>...</think>)."""
    add = flag_adder(p, prefix, suppress)
    add("--no-thinking", dest="thinking", action="store_const", const=False, default=None,
        help="ask the model not to think first (the template's enable_thinking=false, or /no_think); default: "
             "reasoning.thinking in config.toml (on)")
    add("--thinking", dest="thinking", action="store_const", const=True,
        help="let the model think first where config.toml turned it off")


def add_remote_args(p, *, prefix: str = "", suppress: bool = False, key_flag: str = "--api-key",
                    key_dest: str = "api_key") -> None:
    """`key_flag`, `key_dest`: serve's own --api-key guards its clients, so there the backend's key is
    --backend-api-key (remote_config then reads it from `key_dest`)."""
    add = flag_adder(p, prefix, suppress)
    add("--backend", dest="backend", choices=("local", "openai"), default=None,
        help="local: llama.cpp here; openai: an OpenAI-compatible server (vLLM, llama-server, localspec serve); "
             "default: config.toml backend.kind (local)")
    add("--base-url", dest="base_url", metavar="URL", default=None,
        help="server API root for --backend openai, e.g. http://host:8000/v1 (default: backend.base_url)")
    add("--model", dest="remote_model", metavar="NAME", default=None,
        help="model name on the server (default: backend.model, else the first it lists)")
    add(key_flag, dest=key_dest, metavar="KEY", default=None,
        help="bearer token for the server (default: backend.api_key, env LOCALSPEC_REMOTE_API_KEY or "
             "OPENAI_API_KEY)")


def remote_config(args, prefix: str = "", key_dest: str = "api_key"):
    """The server the arguments (or config.toml) choose, or None for the local engine (launch/backend_choice.py)."""
    from dataclasses import replace

    from localspec.launch.backend_choice import resolve_remote
    from localspec.settings.config_toml import load_config

    flags = replace(flags_from_args(args, prefix), api_key=getattr(args, prefix + key_dest, None))
    return resolve_remote(flags, load_config())


def flags_from_args(args: argparse.Namespace, prefix: str = ""):
    """The RunFlags the parsed arguments hold (names the parser did not define, or the user did not give at the
    top level, stay unset)."""
    from localspec.launch.flags import RunFlags

    values: dict[str, Any] = {}
    for name in RunFlags.names():
        value = getattr(args, prefix + name, None)
        if value is None:
            continue
        values[name] = tuple(value) if name == "stop" else value
    return RunFlags(**values)


def config_from_args(args: argparse.Namespace, prefix: str = "", **kw):
    """The RunConfig for a command's arguments (launch.resolve_config; `kw` as it takes)."""
    from localspec.launch.run_config import resolve_config

    return resolve_config(flags_from_args(args, prefix), **kw)


def open_from_args(args: argparse.Namespace, config=None, *, warn: bool = True, history=None, generations=None):
    """Resolve, open the pair and build the engine, drafting from the stored tool-call history (`history`: one
    that also keeps this run's calls, agent/drafting_memory.py) and keeping its generations in `generations` (where the
    run is recorded); the chat template warning goes to stderr (unless `warn` is off: `run --raw` uses no
    template)."""
    import sys

    from localspec.agent.drafting_memory import call_history
    from localspec.launch.open import open_engine

    config = config or config_from_args(args)
    if "history" not in config.drafting.drafters:
        history = None
    elif history is None:
        history = call_history()
    opened = open_engine(config, history=history, generations=generations)
    if opened.warning and warn:
        from localspec.terminal import safe_text

        print(f"warning: {safe_text(opened.warning, 2000)}", file=sys.stderr)  # it names a file: escaped
    return opened
