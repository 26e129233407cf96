"""`localspec` with no subcommand (or `localspec tui`): the terminal app.

    localspec [--pair NAME | --target PATH [--draft PATH]] [--workspace DIR]

The options live on the main parser (cli.build_parser calls add_top_level_args) under tui_* names, so they never
collide with a subcommand's own --target/--draft. Textual is imported only when the app actually starts.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from localspec.commands.shared_flags import (
    APP_PREFIX,
    add_generation_args,
    add_model_args,
    add_remote_args,
    add_thinking_args,
    flags_from_args,
)
from localspec.errors import ConfigError
from localspec.launch.run_config import APP_MAX_TOKENS


def add_top_level_args(parser: argparse.ArgumentParser) -> None:
    _add_args(parser, top_level=True)


def _add_args(p: argparse.ArgumentParser, top_level: bool = False) -> None:
    # SUPPRESS as every default, at the top level and on `tui` alike: a namespace holds these names only where the
    # user gave them, so a command can tell that an app option came before it (cli.py refuses those), and
    # `localspec --workspace DIR tui` keeps DIR (a default of `tui`'s own would overwrite it).
    default = argparse.SUPPRESS
    g = p.add_argument_group("app") if top_level else p
    # Every model, drafting and sampling flag `localspec run` takes (commands/shared_flags.py), under APP_PREFIX.
    add_model_args(g, prefix=APP_PREFIX, suppress=True)
    add_generation_args(g, prefix=APP_PREFIX, suppress=True, max_tokens=APP_MAX_TOKENS)
    add_thinking_args(g, prefix=APP_PREFIX, suppress=True)
    add_remote_args(g, prefix=APP_PREFIX, suppress=True)
    g.add_argument("--no-tools", dest="tui_no_tools", action="store_true", default=default,
                   help="new chats start with the tools off (F6 switches them; the default is settings' "
                        "tools.enabled, on)")
    g.add_argument("--workspace", dest="tui_workspace", metavar="DIR", default=default,
                   help="folder the app's tools work in (default: the current folder, or a reopened "
                        "conversation's)")
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
    from localspec.tui.launch_options import AppOptions

    flags = flags_from_args(args, APP_PREFIX)
    workspace = getattr(args, "tui_workspace", None)
    if flags.draft and not flags.target:
        raise ConfigError("--draft needs --target (a pair already names its draft model)")
    conv = _saved_conversation(getattr(args, "tui_resume", None), getattr(args, "tui_continue", False))
    ws = Path(workspace).expanduser() if workspace else Path.cwd()
    if conv is not None and not workspace and conv.workspace and Path(conv.workspace).is_dir():
        ws = Path(conv.workspace)  # tools continue where the conversation's files are
    if not ws.is_dir():
        raise ConfigError(f"--workspace {ws}: not an existing directory")
    if flags.target and not Path(flags.target).expanduser().is_file():
        raise ConfigError(f"--target {flags.target}: file not found")
    if flags.draft and not Path(flags.draft).expanduser().is_file():
        raise ConfigError(f"--draft {flags.draft}: file not found")
    if flags.chat_template:
        from localspec.prompting.template_file import template_source

        template_source(flags.chat_template)  # a bad file or name is a one-line error now, not after the model loads
    from localspec.launch.run_config import check_flags

    check_flags(flags)  # a bad number is a one-line error now, not after the app has started
    if flags.backend == "openai" or flags.base_url:
        from localspec.launch.backend_choice import resolve_remote
        from localspec.settings.config_toml import load_config

        resolve_remote(flags, load_config())  # an incomplete --backend openai is a one-line error now
    return AppOptions(flags=flags, workspace=ws.resolve(), resume=conv.id if conv is not None else None,
                      tools_on=not getattr(args, "tui_no_tools", False))


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
