"""The app's turn path without the screen (benchmarks/never_slower.py's `app` front end): the session the app opens
(tui/session.py: ChatSession, the agent session on its compute thread, with the app's defaults: tools offered, one
core left to the screen) loads the pair and answers one message as the chat screen's Enter does. Prints the turn's
statistics and text as one JSON line.

    python benchmarks/app_turn.py --target T.gguf [--draft D.gguf | --no-draft] [--max-tokens N] PROMPT

The data folders are the environment's (never_slower.py gives each run empty ones); nothing is saved.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
from pathlib import Path

from localspec.agent import Done
from localspec.launch.flags import RunFlags
from localspec.tui.launch_options import AppOptions
from localspec.tui.session import ChatSession


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("prompt")
    ap.add_argument("--target", required=True)
    ap.add_argument("--draft")
    ap.add_argument("--no-draft", action="store_true")
    ap.add_argument("--max-tokens", type=int, default=128)
    a = ap.parse_args(argv)
    flags = RunFlags(target=a.target, draft=a.draft, no_draft=a.no_draft, max_tokens=a.max_tokens, temperature=0.0)
    with tempfile.TemporaryDirectory(prefix="app-turn-") as ws:
        session = ChatSession(AppOptions(flags=flags, workspace=Path(ws), record=False))
        done: list[Done] = []
        try:
            session.load(session.initial_selection())
            session.run_turn(a.prompt, lambda ev: done.append(ev) if isinstance(ev, Done) else None,
                             threading.Event())
        finally:
            session.shutdown()
    if not done or done[-1].result.error:
        print(f"app turn failed: {done[-1].result.error if done else 'no Done event'}", file=sys.stderr)
        return 1
    result = done[-1].result
    print(json.dumps({"stats": result.stats.to_dict(), "text": result.text,
                      "tool_calls": [c.to_dict() for c in result.tool_calls]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
