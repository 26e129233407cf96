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
                   help="folder the app's tools work in (default: the current folder, or a reopened "
                        "conversation's)")
    g.add_argument("--chat-template", dest="tui_chat_template", metavar="FILE", default=default,
                   help="Jinja chat template instead of the GGUF's own (default: config.toml chat_templates.<pair>)")
    saved = g.add_mutually_exclusive_group() if top_level else p.add_mutually_exclusive_group()
    saved.add_argument("--continue", dest="tui_continue", action="store_true", default=default,
                       help="reopen the most recent saved conversation")
    saved.add_argument("--resume", dest="tui_resume", metavar="ID", default=default,
                       help="reopen a saved conversation (IDs: `localspec sessions`)")
    g.add_argument("--mcp-config", dest="tui_mcp_config", metavar="FILE", default=default,
                   help="MCP servers for the app's tools (default: mcp.json in the config folder)")


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
    conv = _saved_conversation(getattr(args, "tui_resume", None), getattr(args, "tui_continue", False))
    ws = Path(workspace).expanduser() if workspace else Path.cwd()
    if conv is not None and not workspace and conv.workspace and Path(conv.workspace).is_dir():
        ws = Path(conv.workspace)  # tools continue where the conversation's files are
    if not ws.is_dir():
        raise ConfigError(f"--workspace {ws}: not an existing directory")
    if target and not Path(target).expanduser().is_file():
        raise ConfigError(f"--target {target}: file not found")
    if draft and not Path(draft).expanduser().is_file():
        raise ConfigError(f"--draft {draft}: file not found")
    chat_template = getattr(args, "tui_chat_template", None)
    if chat_template:
        from localspec.chat.template_file import read_template_file

        read_template_file(chat_template)  # a bad file is a one-line error now, not after the model loads
    return AppOptions(pair=pair, target=target, draft=draft, workspace=ws.resolve(), chat_template=chat_template,
                      resume=conv.id if conv is not None else None)


def _mcp_config(path: str | None) -> Path | None:
    if path and not Path(path).expanduser().is_file():
        raise ConfigError(f"--mcp-config {path}: file not found")
    return Path(path).expanduser() if path else None


def _saved_conversation(resume: str | None, last: bool):
    """The conversation --resume ID or --continue names; a one-line error when there is none."""
    from localspec.conversations import find_saved

    return find_saved(resume, last, messages=False)


def cmd_tui(args: argparse.Namespace) -> int:
    options = options_from_args(args)
    options.mcp_config = _mcp_config(getattr(args, "tui_mcp_config", None))
    try:
        from localspec.tui.app import LocalspecApp
    except ModuleNotFoundError as exc:
        if exc.name == "textual":
            raise ConfigError("the terminal app needs Textual: pip install textual") from None
        raise
    LocalspecApp(options).run()
    return 0
