"""The agent session as the app drives it (agent/session.py holds the session itself): loads and turns run on one
compute thread whichever worker asks, a turn's events reach the screen through a `post` callable (the agent's own,
its text batched: tui/turn.py), one Done closing every turn, the
statistics panel's session totals, and the tool the next message must call (/tool NAME, the palette).

Plain Python (no Textual): the app calls load() and run_turn() from worker threads.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

from localspec.agent.session import AgentSession
from localspec.errors import LocalspecError
from localspec.agent import Done, Notice
from localspec.agent.backend import PairInfo
from localspec.agent.outcome import AgentResult
from localspec.runtime.compute_thread import ComputeThread
from localspec.settings.config_toml import Settings
from localspec.speculative import SpecEngine, Stats
from localspec.tui.launch_options import AppOptions
from localspec.tui.livestats import ExchangeTotals, SessionView, StatsView
from localspec.tui.turn import Batcher, ChatEvent

Post = Callable[[ChatEvent], object]  # what it returns is not used


class ChatSession(AgentSession):
    def __init__(self, options: AppOptions, settings: Settings | None = None) -> None:
        self.exchanges = ExchangeTotals()  # what each exchange's turn generated: the panel's session totals
        self.next_tool: str | None = None  # a tool the next message must call (/tool NAME, the palette)
        # Loads and turns run on one thread, whichever worker asks (runtime/compute_thread.py says why).
        self._compute = ComputeThread("localspec-engine")
        super().__init__(options, settings)

    def load(self, sel) -> PairInfo:
        """Load (or switch to) a pair, or connect to a remote server (a launch.backend_choice.RemoteConfig)."""
        return self._compute.call(super().load, sel)

    def start_tools(self, notice: Callable[[str], None]) -> None:
        """Start the MCP servers; a broken mcp.json is a notice and the app runs with the built-in tools."""
        try:
            self.start_mcp(notice)
        except LocalspecError as exc:
            notice(f"MCP servers not started: {exc}")

    def shutdown(self, timeout: float = -1) -> bool:
        done = super().shutdown(timeout)
        if done:
            self._compute.close()
        return done

    def reset(self) -> None:
        """A new conversation: the session totals restart, and no tool is forced."""
        with self._lock:
            super().reset()
            self.exchanges = ExchangeTotals()
            self.next_tool = None

    def continue_conversation(self, conv, *, record: bool = False) -> None:
        """The panel's session totals are the conversation's own, counted from its saved steps' statistics."""
        with self._lock:
            super().continue_conversation(conv, record=record)
            self.next_tool = None
            stats = self.conversations.message_stats(conv.id) if self.conversations is not None else []
            self.exchanges = ExchangeTotals.of_saved(conv.messages or [], stats)

    @property
    def totals(self) -> SessionView:
        """The statistics panel's session totals: the turns of the exchanges the conversation has now."""
        return self.exchanges.view

    def take_back(self, k: int) -> str:
        with self._lock:
            at = k % max(len(self.user_positions()), 1)
            text = super().take_back(k)
            self.exchanges.drop_from(at)
            return text

    def delete_exchange(self, k: int) -> int:
        with self._lock:
            at = k % max(len(self.user_positions()), 1)
            gone = super().delete_exchange(k)
            self.exchanges.drop(at)
            return gone

    def run_turn(self, text: str, post: Post, cancel: threading.Event, *, tool: str | None = None) -> None:
        """Answer one user message through the agent loop, reporting through `post`, and always last a Done (its
        result's error says why a turn could not run); never raises. `tool`: a tool the first step must call (else
        the one /tool NAME set for the next message, else the app's choice)."""
        self._compute.call(self._run_turn, text, post, cancel, tool)

    def _run_turn(self, text: str, post: Post, cancel: threading.Event, tool: str | None) -> None:
        with self._lock:
            if self.agent is None:
                post(failed("no model is loaded: pick a pair in the models screen (F2)"))
                return
            choice = tool or self.next_tool or self.options.tool_choice
            self.next_tool = None
            if choice not in ("auto", "none") and not self.tools_on:
                self.tools_on = True  # forcing a tool means offering the tools, for this chat from now on
            relay = Relay(post, self.engine)
            recorder = self.recorder
            saving = recorder is not None and recorder.error is None
            try:
                result = self.run(text, tool_choice=choice, cancel=cancel, on_event=relay)
            except LocalspecError as exc:
                relay.flush()
                post(failed(str(exc)))
                return
            except Exception as exc:  # a bug must show as a message in the chat, not kill the app
                relay.flush()
                post(failed(f"generation failed: {type(exc).__name__}: {exc}"))
                return
            relay.flush()
            if saving and recorder is not None and recorder.error:
                post(Notice(0, f"this conversation is no longer being saved: {recorder.error}"))
            self.exchanges.answered(len(self.user_positions()) - 1,
                                    StatsView.of(result.stats, first_token_s=result.first_token_s),
                                    result.stats.generation_s)
            post(Done(result))  # after the totals: the screen shows them when it sees the end


def failed(message: str) -> Done:
    """The end of a turn that could not run (no model, a refused tool choice, a bug): nothing was generated."""
    return Done(AgentResult(finish_reason="error", error=message))


class Relay:
    """The agent's events for the screen: text batched per kind with live stats attached, prompt reading, tool calls
    and notices passed on as they are (the run's Done comes from the session, after the totals).

    Live figures come from the engine's in-progress Stats (a generation's own timing is only set at its end), timed
    from the first token of that generation.
    """

    def __init__(self, post: Post, engine: SpecEngine | None) -> None:
        self.post = post
        self.engine = engine
        self.batch = Batcher(post, self.live)
        self._gen: Stats | None = None  # the engine Stats object of the generation in progress
        self._gen_start = 0.0

    def live(self) -> StatsView | None:
        if self.engine is None:  # a remote server: its figures come with the end of the turn
            return None
        stats = self.engine.last_stats
        if stats is None or stats is not self._gen:
            return None
        return StatsView.of(stats, elapsed_s=time.perf_counter() - self._gen_start,
                            target_token_s=self.engine.costs.single_token_s())

    def flush(self) -> None:
        self.batch.flush()

    def __call__(self, ev) -> None:
        kind = ev.type
        if kind == "text":
            last = self.engine.last_stats if self.engine is not None else None
            if last is not self._gen or last is None:
                self._gen, self._gen_start = last, time.perf_counter()
            self.batch.add(ev.text, ev.origin, kind=ev.kind, counts=ev.token >= 0)
        elif kind in ("tool_call", "notice"):
            self.batch.flush(pause=True)  # generation stops for a while: the next rate starts afresh
            self.post(ev)
        elif kind in ("prompt", "tool_result"):
            self.post(ev)
