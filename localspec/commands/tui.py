"""`localspec` with no subcommand (or `localspec tui`): the terminal app.

    localspec [--pair NAME | --target PATH [--draft PATH]] [--workspace DIR]

The options live on the main parser (cli.build_parser calls add_top_level_args) under tui_* names, so they never
collide with a subcommand's own --target/--draft. Textual is imported only when the app actually starts.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from localspec.errors import ConfigError


def add_top_level_args(parser: argparse.ArgumentParser) -> None:
    _add_args(parser, top_level=True)


def _add_args(p: argparse.ArgumentParser, top_level: bool = False) -> None:
    # Top level: SUPPRESS keeps a subcommand's namespace free of these names unless the user gave them.
    default = argparse.SUPPRESS if top_level else None
    g = p.add_argument_group("app") if top_level else p
    which = g.add_mutually_exclusive_group() if top_level else p.add_mutually_exclusive_group()
    which.add_argument("--pair", dest="tui_pair", metavar="NAME", default=default,
                       help="model pair for the app (catalog or `localspec add` name)")
    which.add_argument("--target", dest="tui_target", metavar="PATH", default=default,
                       help="target GGUF for the app instead of a pair")
    g.add_argument("--draft", dest="tui_draft", metavar="PATH", default=default,
                   help="draft GGUF for --target (same vocabulary)")
    g.add_argument("--workspace", dest="tui_workspace", metavar="DIR", default=default,
                   help="folder the app's tools work in (default: the current folder)")


def register(sub) -> None:
    p = sub.add_parser("tui", help="open the terminal app (the same as running `localspec` alone)")
    _add_args(p)
    p.set_defaults(func=cmd_tui)


def options_from_args(args: argparse.Namespace):
    from localspec.tui.options import AppOptions

    pair, target = getattr(args, "tui_pair", None), getattr(args, "tui_target", None)
    draft, workspace = getattr(args, "tui_draft", None), getattr(args, "tui_workspace", None)
    if draft and not target:
        raise ConfigError("--draft needs --target (a pair already names its draft model)")
    ws = Path(workspace).expanduser() if workspace else Path.cwd()
    if not ws.is_dir():
        raise ConfigError(f"--workspace {ws}: not an existing directory")
    if target and not Path(target).expanduser().is_file():
        raise ConfigError(f"--target {target}: file not found")
    if draft and not Path(draft).expanduser().is_file():
        raise ConfigError(f"--draft {draft}: file not found")
    return AppOptions(pair=pair, target=target, draft=draft, workspace=ws.resolve())


def cmd_tui(args: argparse.Namespace) -> int:
    options = options_from_args(args)
    try:
        from localspec.tui.app import LocalspecApp
    except ModuleNotFoundError as exc:
        if exc.name == "textual":
            raise ConfigError("the terminal app needs Textual: pip install textual") from None
        raise
    LocalspecApp(options).run()
    return 0
