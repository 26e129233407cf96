"""Visible text that must never show a call trigger: held back while its tail could still become one."""

from __future__ import annotations

from typing import Sequence


class TriggerWatch:
    """Passes text through, holding back any tail that could be the start of a trigger; once a trigger appears,
    the text before it is released and nothing more. The engine stops on triggers itself (they are stop strings);
    this covers answer text released by the reasoning phase, which watched for `</think>` only."""

    def __init__(self, triggers: Sequence[str]):
        self.triggers = tuple(t for t in triggers if t)
        self._longest = max((len(t) for t in self.triggers), default=0)
        self.buf = ""
        self.content = ""  # text released so far
        self.triggered = False

    def feed(self, text: str) -> str:
        if self.triggered:
            return ""
        if not self.triggers:
            return self._release(text)
        self.buf += text
        hits = [i for i in (self.buf.find(t) for t in self.triggers) if i >= 0]
        if hits:
            self.triggered = True
            safe, self.buf = self.buf[:min(hits)], ""
            return self._release(safe)
        keep = next((k for k in range(min(self._longest - 1, len(self.buf)), 0, -1)
                     if any(t.startswith(self.buf[-k:]) for t in self.triggers)), 0)
        safe, self.buf = self.buf[:len(self.buf) - keep], self.buf[len(self.buf) - keep:]
        return self._release(safe)

    def flush(self) -> str:
        """The end of the text: what was held back was no trigger after all."""
        if self.triggered:
            return ""
        rest, self.buf = self.buf, ""
        return self._release(rest)

    def _release(self, text: str) -> str:
        self.content += text
        return text
