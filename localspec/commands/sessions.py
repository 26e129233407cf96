"""`localspec sessions`: the saved conversations, headless (the app's sessions screen, F4, does the same).

    localspec sessions [--search TEXT] [--limit N] [--json]     list, most recently active first
    localspec sessions show ID [--json]                         one conversation (Markdown, or JSON)
    localspec sessions export ID [--format md|json] [-o PATH] [--force] [--json]
    localspec sessions rename ID TITLE [--json]
    localspec sessions delete ID [--json]

An ID may be shortened to any unique prefix. `localspec --continue` / `--resume ID` reopen one in the app.
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime

from localspec.terminal import display_text, safe_json, safe_json_text, safe_text


def register(sub) -> None:
    p = sub.add_parser("sessions", help="saved conversations: list, show, export, rename, delete",
                       description="Saved conversations (newest first). Reopen one with `localspec --continue` or "
                                   "`localspec --resume ID`.")
    p.add_argument("--search", metavar="TEXT", default=None,
                   help="only conversations whose title or messages contain TEXT")
    p.add_argument("--limit", type=int, default=None, metavar="N", help="at most N conversations")
    p.add_argument("--json", action="store_true", help="a JSON list of conversations, each with its messages")
    p.set_defaults(func=cmd_list)
    actions = p.add_subparsers(dest="sessions_action", metavar="ACTION")

    def action(name: str, help: str, func):
        a = actions.add_parser(name, help=help)
        a.add_argument("id", metavar="ID", help="conversation ID (or a unique prefix)")
        # SUPPRESS: without the flag here, `sessions --json ACTION` keeps the parent's value.
        a.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON")
        a.set_defaults(func=func)
        return a

    action("show", "print one conversation (Markdown, or the full JSON)", cmd_show)
    e = action("export", "write a conversation to a Markdown or JSON file", cmd_export)
    e.add_argument("--format", choices=("md", "json"), default="md", help="file format (default md)")
    e.add_argument("-o", "--output", metavar="PATH", default=None,
                   help="file or folder to write (default: <data dir>/exports/)")
    e.add_argument("--force", action="store_true", help="replace PATH if it exists")
    r = action("rename", "give a conversation a new title", cmd_rename)
    r.add_argument("title", metavar="TITLE")
    d = action("delete", "delete a conversation and its messages (asks first; --yes does not)", cmd_delete)
    d.add_argument("-y", "--yes", action="store_true", help="delete without asking (needed without a terminal)")


def _store():
    from localspec.conversations import open_store

    return open_store()


def _json(value) -> None:
    print(safe_json(value))  # titles and messages are stored text: control characters as JSON escapes


def cmd_list(args) -> int:
    from localspec.errors import ConfigError

    if args.limit is not None and args.limit < 1:
        raise ConfigError(f"--limit must be >= 1, not {args.limit}")
    with _store() as store:
        convs = store.list(args.search, limit=args.limit, messages=args.json)
    if args.json:
        _json([c.to_dict() for c in convs])
        return 0
    if not convs:
        print("no saved conversations" + (f" with {safe_text(args.search, 200)!r} in the title or messages"
                                          if args.search else ""),
              file=sys.stderr)
        return 0
    # The pair column is as wide as its widest entry: a remote pair ("model @ host:port") cut short names nothing.
    pairs = [safe_text(c.pair or "-") for c in convs]
    width = max(len("PAIR"), *map(len, pairs))
    print(f"{'ID':<8}  {'LAST ACTIVE':<16}  {'MSGS':>4}  {'PAIR':<{width}}  TITLE")
    for c, pair in zip(convs, pairs):
        when = datetime.fromtimestamp(c.updated).strftime("%Y-%m-%d %H:%M")
        print(f"{safe_text(c.id):<8}  {when:<16}  {c.message_count:>4}  {pair:<{width}}  {safe_text(c.display_title)}")
    return 0


def cmd_show(args) -> int:
    from localspec.conversations import render

    with _store() as store:
        conv = store.get(args.id, turns=True)
    if getattr(args, "json", False):
        sys.stdout.write(safe_json_text(render(conv, "json")))
    else:  # messages, reasoning and tool output as stored: shown, never sent to the terminal as controls
        sys.stdout.write(display_text(render(conv, "md")))
    return 0


def cmd_export(args) -> int:
    from localspec.conversations import export
    from localspec.conversations.exports import ExportExists

    with _store() as store:
        conv = store.get(args.id, turns=True)
    taken = _earlier_export(conv, args)
    try:
        path = export(conv, args.format, args.output, overwrite=args.force)
    except ExportExists as exc:
        raise ExportExists(f"{exc} (or add --force to replace it)") from None
    if taken is not None and taken != path:  # never silently: the default name was taken by an earlier export
        print(f"note: {safe_text(str(taken))} exists (an earlier export); this one is {safe_text(path.name)} "
              "(--force replaces the earlier)", file=sys.stderr)
    if getattr(args, "json", False):
        _json({"id": conv.id, "format": args.format, "path": str(path)})
    else:
        print(safe_text(str(path)))
    return 0


def _earlier_export(conv, args):
    """The default export file of this conversation when it already exists (export then writes NAME-2, ...)."""
    from pathlib import Path

    from localspec.conversations import default_export_path

    out = args.output
    if out is not None and not (Path(out).expanduser().is_dir() or str(out).endswith(("/", "\\"))):
        return None  # a file name the user chose: an existing one is refused, not renumbered
    first = default_export_path(conv, args.format, Path(out).expanduser() if out else None)
    return first if first.exists() else None


def cmd_rename(args) -> int:
    with _store() as store:
        cid = store.resolve(args.id)
        title = store.rename(cid, args.title)
    if getattr(args, "json", False):
        _json({"id": cid, "title": title})
    else:
        print(f"renamed {cid}: {safe_text(title)}")
    return 0


def cmd_delete(args) -> int:
    from localspec.errors import ConfigError

    with _store() as store:
        conv = store.get(args.id, messages=False)
        if not args.yes:
            what = f"{conv.id} {safe_text(conv.display_title)!r} ({conv.message_count} messages)"
            if not sys.stdin.isatty():
                raise ConfigError(f"delete {what}? Nothing asked without a terminal: add --yes")
            answer = input(f"delete {what}? This cannot be undone [y/N] ")
            if answer.strip().lower() not in ("y", "yes"):
                print("kept", file=sys.stderr)
                return 1
        store.delete(conv.id)
    if getattr(args, "json", False):
        _json({"id": conv.id, "deleted": True})
    else:
        print(f"deleted {conv.id}: {safe_text(conv.display_title)}")
    return 0
