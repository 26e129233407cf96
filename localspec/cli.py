"""Command line entry point: one subcommand per module under localspec/commands/.

Errors reach the user as one line: a LocalspecError as its own message (exit 1), anything else as its type and
message with a hint (exit 1). LOCALSPEC_DEBUG=1 prints the full traceback as well, like huggingface_hub's HF_DEBUG.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback

from localspec import __version__
from localspec.commands.shared_flags import APP_PREFIX
from localspec.constants import ENV_DEBUG
from localspec.errors import LocalspecError
from localspec.terminal import safe_text

# Every command module, in the order `localspec --help` lists them; each has register(subparsers). Adding a
# command is one line here. A module with add_top_level_args (the app) also owns the bare `localspec [--pair ...]`.
COMMANDS = [
    "run",
    "doctor",
    "models",
    "bench",
    "serve",
    "sessions",
    "tools",
    "tui",
]

DEBUG_ENV = ENV_DEBUG


class _Parser(argparse.ArgumentParser):
    """Usage mistakes get the same one-line `error:` form and exit code as every other error."""

    def error(self, message: str):
        self.exit(1, f"error: {self.prog}: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="localspec", description="Local assistant with speculative decoding.")
    parser.add_argument("--version", action="version", version=f"localspec {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        module = importlib.import_module(f"localspec.commands.{name}")
        module.register(sub)
        if hasattr(module, "add_top_level_args"):
            module.add_top_level_args(parser)
            parser.set_defaults(tui_func=module.cmd_tui)
    return parser


def app_option_before_command(parser: argparse.ArgumentParser, args: argparse.Namespace, argv: list[str]) -> str:
    """Why the command line is refused when an app option was written before a command other than `tui`
    (`localspec --workspace /tmp/ws run --tools ...`), else ''. Such an option belongs to the app, and the command
    never saw it: the run was confined to the current folder, a `--backend openai` run went to the local model.
    Refused rather than moved over, because a name can mean something else after a command (`serve --api-key` is
    the key its clients need, the app's `--api-key` the remote backend's)."""
    command = getattr(args, "command", None)
    if command is None or command == "tui":  # the app's own options: `tui` takes them before or after
        return ""
    words = argv[:argv.index(command)] if command in argv else argv
    for action in parser._actions:
        if not action.option_strings or not hasattr(args, action.dest) or \
                not action.dest.startswith(APP_PREFIX) or action.dest == APP_PREFIX + "func":
            continue
        given = next((w.split("=", 1)[0] for w in words for o in action.option_strings
                      if w.split("=", 1)[0] == o or (w.startswith("--") and o.startswith(w.split("=", 1)[0]))),
                     action.option_strings[0])
        sub = _subcommand(parser, command)
        there = _SPELLED_THERE.get((command, given), given)
        if sub is not None and there in sub._option_string_actions:
            return f"{given} before the command is an option of the app (`localspec` alone): write it after " \
                   f"`{command}` (localspec {command} {there} ...)"
        return f"{given} before the command is an option of the app (`localspec` alone); `localspec {command}` " \
               "does not take it"
    return ""


# App options a command spells differently: serve's own --api-key is the key its clients must send.
_SPELLED_THERE = {("serve", "--api-key"): "--backend-api-key"}


def _subcommand(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices.get(name)
    return None


def debug_enabled(env=None) -> bool:
    value = (os.environ if env is None else env).get(DEBUG_ENV, "")
    return value.strip().lower() not in ("", "0", "false", "no", "off")


def main(argv: list[str] | None = None) -> int:
    try:
        code = _main(argv)
        sys.stdout.flush()  # a closed pipe shows up here, inside the handler, not at interpreter exit
        return code
    except BrokenPipeError:
        return _stdout_closed()


def _main(argv: list[str] | None) -> int:
    try:
        from localspec.debug_log import configure

        configure()  # LOCALSPEC_LOG=debug: the debug log file in the log folder
        parser = build_parser()
        args = parser.parse_args(argv)
        misplaced = app_option_before_command(parser, args, sys.argv[1:] if argv is None else argv)
        if misplaced:
            parser.error(misplaced)
        if not getattr(args, "func", None):
            tui = getattr(args, "tui_func", None)
            if tui is None:
                parser.print_help()
                return 0
            args.func = tui
        return int(args.func(args) or 0)
    except LocalspecError as exc:
        _show_traceback()
        print(f"error: {safe_text(exc, 4000, newlines=True)}", file=sys.stderr)  # may quote model or server text
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        raise
    except Exception as exc:  # a bug: still one line, and the way to see more
        _show_traceback()
        hint = "" if debug_enabled() else f" (set {DEBUG_ENV}=1 to see the traceback)"
        print(f"error: unexpected {type(exc).__name__}: {safe_text(exc, 4000, newlines=True)}{hint}", file=sys.stderr)
        return 1


def _show_traceback() -> None:
    if debug_enabled():
        traceback.print_exc(file=sys.stderr)


def _stdout_closed() -> int:
    """The reader went away (`localspec models --json | head`): not an error. Python would still try to flush
    stdout at exit and print "Exception ignored ... BrokenPipeError", so point stdout at devnull first (the
    recipe from the Python docs' signal module notes)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real file descriptor behind stdout (an embedding host, a test's capture)
        pass
    return 0
