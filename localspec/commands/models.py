"""`localspec models | pull | add | rm | config`: the model catalog, downloads and config.toml.

Handlers return an exit code and raise LocalspecError for anything the user must fix (the CLI prints it as one line).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from localspec.constants import ENV_LOG
from localspec.debug_log import log_file
from localspec.errors import ConfigError
from localspec.models.catalog import format_mb, load_catalog
from localspec.models.install import add_pair, pair_state, pull_file, pull_pair, remove
from localspec.models.paths import get_paths
from localspec.models.registry import load_registry
from localspec.models.selection import DEMO, demo_pair
from localspec.prompting.template_file import TemplateChoice, file_template
from localspec.settings.config_toml import (
    config_keys,
    env_name,
    env_overrides,
    load_config,
    mcp_config_path,
    set_config_value,
)
from localspec.terminal import safe_text


# A draft of another family than its target's: its text is tokenized again with the target's vocabulary.
TRANSLATED = "  (draft of another family: translated)"


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("models", help="list catalog pairs and installed model files")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_models)

    p = subparsers.add_parser("pull", help="download a catalog pair, or one file: pull REPO_ID FILENAME")
    p.add_argument("name", metavar="PAIR|REPO_ID", help="catalog pair name, or a hub repository id")
    p.add_argument("filename", nargs="?", metavar="FILENAME", help="file in REPO_ID (downloads just that file)")
    p.add_argument("--revision", help="branch, tag or commit of REPO_ID (default: main)")
    p.add_argument("--offline", action="store_true", help="use local files only (like HF_HUB_OFFLINE=1)")
    p.set_defaults(func=cmd_pull)

    p = subparsers.add_parser("add", help="register local GGUF files as a named pair (--default: and run it by "
                                          "default)")
    p.add_argument("name", metavar="NAME")
    p.add_argument("--target", required=True, metavar="PATH", help="target model GGUF")
    p.add_argument("--draft", metavar="PATH", help="draft model GGUF (one of another family drafts through text)")
    p.add_argument("--default", action="store_true",
                   help="make it the default pair; without it, the pair a command runs now stays the default")
    p.set_defaults(func=cmd_add)

    p = subparsers.add_parser("rm", help="forget a pair (or REPO_ID FILENAME); --files deletes downloads")
    p.add_argument("name", metavar="NAME|REPO_ID")
    p.add_argument("filename", nargs="?", metavar="FILENAME")
    p.add_argument("--files", action="store_true", help="also delete the downloaded files")
    p.set_defaults(func=cmd_rm)

    p = subparsers.add_parser("config", help="show or change settings (config.toml)")
    sub = p.add_subparsers(dest="config_command", metavar="show|set", required=True)
    s = sub.add_parser("show", help="effective settings (file + LOCALSPEC_* environment)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_config_show)
    s = sub.add_parser("set", help="set KEY to VALUE in config.toml ('none' resets it)")
    s.add_argument("key", metavar="KEY", help="e.g. default_pair, sampling.temperature, drafters.model")
    s.add_argument("value", metavar="VALUE")
    s.set_defaults(func=cmd_config_set)


def _file_json(f, registry) -> dict | None:
    if f is None:
        return None
    return {**f.model_dump(), "installed": registry.usable(f.repo, f.file) is not None}


def _templates(files) -> dict[str, TemplateChoice]:
    """Which chat template each installed file renders with (read from its vocabulary), by path."""
    return {f.path: file_template(f.path) for f in files if f.status() != "missing"}


def cmd_models(args: argparse.Namespace) -> int:
    catalog, paths = load_catalog(), get_paths()
    registry = load_registry(paths.registry_file)
    default = _default_pair(load_config(), catalog)
    pairs: list[dict[str, Any]] = [{"name": n, "description": p.description, "default": n == default, "state": pair_state(p, registry),
              "size": p.size, "target": _file_json(p.target, registry), "draft": _file_json(p.draft, registry),
              "head": _file_json(p.head, registry), "drafts_with": p.drafts_with(),
              "hints": p.hints.model_dump()} for n, p in catalog.pairs.items()]
    demo = {**demo_pair(), "default": default == DEMO}
    templates = _templates(registry.files)
    if args.json:
        installed = [{**f.public(), **({"chat_template": templates[f.path].to_dict()} if f.path in templates else {})}
                     for f in registry.files]
        print(json.dumps({"catalog": pairs, "installed": installed,
                          "pairs": {n: up.model_dump() for n, up in registry.pairs.items()},
                          "demo": demo, "default": default}, indent=2))
        return 0
    print(f"pairs (catalog {catalog.source}; * = default)")
    for p in pairs:
        files = [f for f in (p["target"], p["draft"], p["head"]) if f is not None]
        unverified = "" if all(f["verified"] for f in files) else "  (names unverified)"
        drafts = "; ".join(p["drafts_with"]) or "the request alone"
        print(f"{'*' if p['default'] else ' '} {safe_text(p['name']):<18} {p['state']:<9} {format_mb(p['size']):>10}  "
              f"{safe_text(p['target']['file'])}, drafting with {safe_text(drafts)}{unverified}")
    print(f"{'*' if demo['default'] else ' '} {DEMO:<18} {demo['state']:<9} {'':>10}  {demo['description']}")
    if registry.pairs:
        print("\nyour pairs (localspec add)")
        for n, up in registry.pairs.items():
            print(f"{'*' if n == default else ' '} {safe_text(n):<18} {safe_text(up.target)} + "
                  f"{safe_text(up.draft or '(no draft)')}{TRANSLATED if up.translated else ''}")
    print("\ninstalled files" if registry.files else "\nno model files installed: run "
          f"{catalog.pull_hint()}")
    for f in registry.files:
        # File names and paths can hold anything (a local file added by path): shown escaped like all output.
        print(f"  {safe_text(f.repo or '(local)')}  {safe_text(f.file)}  {format_mb(f.size)}  {f.status()}  "
              f"{safe_text(f.path)}")
        if f.path in templates:
            print(f"      chat template: {safe_text(templates[f.path].describe(), 500)}")
    return 0


def _default_pair(settings, catalog) -> str:
    """The pair a command without --pair runs: default_pair when set, else what resolution picks (the first
    installed pair, else the demo model) without downloading; the catalog's default only when nothing is usable
    (then `localspec run` says to pull it)."""
    return _pair_in_use(settings, catalog) or catalog.default


def _pair_in_use(settings, catalog) -> str | None:
    """What a command without --pair runs now (default_pair, or what resolution picks); None when nothing is usable."""
    from localspec.errors import LocalspecError
    from localspec.launch.resolve import resolve_selection

    if settings.default_pair:
        return settings.default_pair
    try:
        sel = resolve_selection(settings=settings, catalog=catalog)
    except LocalspecError:
        return None
    return DEMO if sel.demo else sel.pair


def _announcer():
    """Progress callback for the CLI: tqdm draws the download bar; this says when hashing a big file starts."""
    seen: set[tuple[str, str]] = set()

    def announce(p) -> None:
        if p.phase == "verify" and (p.repo, p.file) not in seen:
            seen.add((p.repo, p.file))
            print(f"verifying {p.file} ({format_mb(p.total or 0)})", file=sys.stderr, flush=True)

    return announce


def cmd_pull(args: argparse.Namespace) -> int:
    if args.filename is None:
        if "/" in args.name:
            raise ConfigError(f"give the file to download: localspec pull {args.name} FILENAME")
        if args.revision:
            raise ConfigError("--revision applies to `localspec pull REPO_ID FILENAME`, not to a catalog pair")
        got = pull_pair(args.name, offline=args.offline, show_progress=True, progress=_announcer())
        print(f"pair '{got.name}' ready\n  target {got.target.path}"
              + (f"\n  draft  {got.draft.path}" if got.draft else "") + (f"\n  head   {got.head.path}" if got.head else ""))
        in_use = _pair_in_use(load_config(), load_catalog())
        if in_use not in (None, got.name):
            print(_other_default(in_use, got.name))
        return 0
    entry = pull_file(args.name, args.filename, revision=args.revision, offline=args.offline, show_progress=True,
                      progress=_announcer())
    print(f"{entry.repo}/{entry.file} ready: {entry.path} ({format_mb(entry.size)}, sha256 {entry.sha256})")
    return 0


def cmd_add(args: argparse.Namespace) -> int:
    """Adding a model does not change what runs unless asked (--default), as adding one to Ollama or LM Studio
    does not: without default_pair in config.toml the default is worked out (the first installed catalog pair, else
    the first added pair, else the demo model), so the first `add` beside the demo would silently take over from it.
    There the pair in use is written down as default_pair, and the line says so."""
    catalog = load_catalog()
    before = _pair_in_use(load_config(), catalog)
    old = load_registry(get_paths().registry_file).pairs.get(args.name)
    pair = add_pair(args.name, args.target, args.draft)
    name = safe_text(args.name)
    print(f"pair '{name}' added: {safe_text(pair.target)} + {safe_text(pair.draft or '(no draft)')}"
          f"{TRANSLATED if pair.translated else ''}")
    if old is not None and (old.target, old.draft) != (pair.target, pair.draft):  # a name used again: say what went
        print(f"  (it replaces '{name}': {safe_text(old.target)} + {safe_text(old.draft or '(no draft)')})")
    if args.default:
        set_config_value("default_pair", args.name)
        was = f" (it was '{safe_text(before)}')" if before and before != args.name else ""
        print(f"'{name}' is the default pair now{was}")
        return 0
    if before is None:  # nothing ran before: the new pair is what runs now
        print(f"'{name}' is the default pair (nothing else was installed)")
        return 0
    if _pair_in_use(load_config(), catalog) != before:
        set_config_value("default_pair", before)
    print(_other_default(before, args.name, "stays"))
    return 0


def _other_default(default: str, name: str, verb: str = "is") -> str:
    name = safe_text(name)
    return (f"the default pair {verb} '{safe_text(default)}' (run this one with --pair {name}; "
            f"`localspec config set default_pair {name}` makes it the default)")


def cmd_rm(args: argparse.Namespace) -> int:
    for line in remove(args.name, args.filename, files=args.files):
        print(line)
    settings = load_config()
    if args.filename is None and settings.default_pair == args.name and args.name not in load_catalog().pairs:
        # An added pair is gone for good: a default naming it would fail every command ("unknown pair").
        set_config_value("default_pair", "none")
        now = _pair_in_use(load_config(), load_catalog())
        print(f"'{safe_text(args.name)}' was the default pair: the default is now "
              + (f"'{safe_text(now)}'" if now else "unset (nothing else is installed)"))
    return 0


_UNSET_MEANS = {"default_pair": "the first installed pair, else the demo model",
                "target_gpu_layers": "the pair's hint", "draft_gpu_layers": "the pair's hint",
                "draft_max": "the pair's hint", "draft_p_min": "the pair's hint", "sampling.seed": "random"}


def _mask(secret: str | None) -> str | None:
    return None if secret is None else "..." + secret[-4:] if len(secret) > 8 else "..."


def cmd_config_show(args: argparse.Namespace) -> int:
    settings = load_config()
    data = settings.as_dict()
    data["backend"]["api_key"] = _mask(data["backend"]["api_key"])  # never print a secret
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    overridden = env_overrides()
    print(f"# {get_paths().config_file}")
    print(f"# MCP servers: {mcp_config_path()}")
    print(f"# debug log: {log_file()} (written with {ENV_LOG}=debug)")
    for key in config_keys():
        section, _, field = key.rpartition(".")
        value = data[section][field] if section else data[field]
        shown = "none" if value is None else json.dumps(value) if isinstance(value, (str, bool)) else value
        note = f"  # from {env_name(key)}" if key in overridden else \
            f"  # {_UNSET_MEANS[key]}" if value is None and key in _UNSET_MEANS else ""
        print(f"{key} = {shown}{note}")
    for pair, path in settings.chat_templates.items():
        print(f"chat_templates.{pair} = {json.dumps(path)}")
    return 0


def cmd_config_set(args: argparse.Namespace) -> int:
    if args.key == "default_pair" and args.value.strip().lower() not in ("", "none", "null", "unset"):
        added = load_registry(get_paths().registry_file).pairs
        catalog = load_catalog()
        if args.value != DEMO and args.value not in added and args.value not in catalog.pairs:
            names = [*catalog.pairs, *added, DEMO]
            raise ConfigError(f"unknown pair {args.value!r} (pairs: {', '.join(names)}; `localspec add NAME "
                              "--target FILE` adds your own)")
    settings = set_config_value(args.key, args.value)
    value = settings.get(args.key)
    print(f"{args.key} = {'none' if value is None else value}")
    if args.key in env_overrides():
        print(f"note: {env_name(args.key)} is set and overrides this value", file=sys.stderr)
    return 0
