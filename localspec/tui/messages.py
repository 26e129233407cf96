"""Textual messages that carry work results from worker threads to the UI thread.

post_message is thread-safe, so a worker never touches widgets: it posts one of these and the UI thread acts.
"""

from __future__ import annotations

from concurrent.futures import Future

from textual.message import Message

from localspec.tools import ApprovalRequest
from localspec.agent.backend import PairInfo
from localspec.tui.turn import ChatEvent


class TurnUpdate(Message):
    def __init__(self, event: ChatEvent) -> None:
        super().__init__()
        self.event = event


class ApprovalAsked(Message):
    """A tool waits for the user: answer by setting the future's result to a Decision (Toad's pattern)."""

    def __init__(self, request: ApprovalRequest, future: Future) -> None:
        super().__init__()
        self.request = request
        self.future = future


class ApprovalWithdrawn(Message):
    """The turn was cancelled while the question was open: close the modal (the tool was already denied)."""

    def __init__(self, future: Future) -> None:
        super().__init__()
        self.future = future


class PairLoaded(Message):
    def __init__(self, info: PairInfo) -> None:
        super().__init__()
        self.info = info


class PairFailed(Message):
    def __init__(self, message: str) -> None:
        super().__init__()
        self.message = message


class PullProgress(Message):
    """Download progress of one file (phase "download" or "verify"; total None while unknown)."""

    def __init__(self, file: str, phase: str, done: int, total: int | None) -> None:
        super().__init__()
        self.file, self.phase, self.done, self.total = file, phase, done, total


class PullFinished(Message):
    def __init__(self, name: str, error: str | None, cancelled: bool = False) -> None:
        super().__init__()
        self.name, self.error, self.cancelled = name, error, cancelled
