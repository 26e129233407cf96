"""Command line entry point: one subcommand per module; any LocalspecError becomes a one-line error and exit 1."""

from __future__ import annotations

import argparse
import sys

from localspec import __version__
from localspec.errors import LocalspecError


class _Parser(argparse.ArgumentParser):
    """Usage mistakes get the same one-line `error:` form and exit code as every other error."""

    def error(self, message: str):
        self.exit(1, f"error: {self.prog}: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    from localspec.commands import doctor, run

    parser = _Parser(prog="localspec", description="Local assistant with speculative decoding.")
    parser.add_argument("--version", action="version", version=f"localspec {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    run.register(sub)
    doctor.register(sub)
    for module in _optional_command_modules():
        module.register(sub)
        if hasattr(module, "add_top_level_args"):  # the app: `localspec [--pair NAME | --target PATH ...]`
            module.add_top_level_args(parser)
            parser.set_defaults(tui_func=module.cmd_tui)
    return parser


def _optional_command_modules():
    """Command groups that live with their feature (models, bench, serve, TUI)."""
    import importlib

    for name in ("localspec.models.commands", "localspec.commands.bench", "localspec.serve.commands",
                 "localspec.commands.tui"):
        try:
            yield importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:  # a feature module exists but a dependency of it is missing: say so
                raise


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        tui = getattr(args, "tui_func", None)
        if tui is None:
            parser.print_help()
            return 0
        args.func = tui
    try:
        return int(args.func(args) or 0)
    except LocalspecError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
