"""What the screens use of the app beyond Textual's App: the session and a few of LocalspecApp's own members.

Textual types a widget's `self.app` as a plain App, and the screens cannot import app.py, which imports them (the
layers allow no cycle, not even for typing). So they reach these through `host(self)`, typed by this protocol;
app.py checks that LocalspecApp satisfies it.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

if TYPE_CHECKING:
    from textual.dom import DOMNode

    from localspec.tui.session import ChatSession


class Host(Protocol):
    session: ChatSession
    loading: bool  # a pair is being loaded
    turn_cancel: threading.Event | None  # the running turn's cancel event (set by the chat screen)
    last_transcript: Path | None

    def switch_pair(self, sel) -> None: ...

    def set_config(self, key: str, value) -> None: ...

    def reload_settings(self) -> None: ...

    def open_conversation(self, cid: str) -> bool: ...

    def delete_conversation(self, cid: str) -> None: ...

    def action_sessions(self) -> None: ...


def host(node: DOMNode) -> Host:
    """The running app, as the screens use it (LocalspecApp)."""
    return cast("Host", node.app)
