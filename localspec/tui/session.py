"""The chat session behind the app: settings, the loaded model pair, the engine, the toolbox and the conversation.

Plain Python (no Textual): the app calls load() and run_turn() from worker threads and receives TurnEvents through
a `post` callable. One lock serialises everything that touches the engine (it is not thread-safe).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from localspec.agent import Transcript
from localspec.errors import LocalspecError
from localspec.models.config import Settings, load_config
from localspec.models.resolve import Selection, resolve_selection
from localspec.speculative.drafters.history import CallHistory
from localspec.tools import Policy, Toolbox
from localspec.tui.livestats import SessionView, StatsView
from localspec.tui.options import AppOptions
from localspec.tui.turn import Batcher, Notice, ToolFinished, ToolStarted, TurnDone, TurnEvent, TurnFailed

Post = Callable[[TurnEvent], None]


@dataclass(frozen=True)
class PairInfo:
    """What the UI shows about the loaded pair."""

    label: str
    target: Path
    draft: Path | None
    pair: str | None
    demo: bool


def describe(sel: Selection) -> PairInfo:
    label = sel.pair or ("demo: " + sel.target.stem if sel.demo else sel.target.name)
    if sel.pair is None and sel.draft is not None:
        label += " + " + sel.draft.name
    return PairInfo(label, sel.target, sel.draft, sel.pair, sel.demo)


def app_threads(requested: int = 0) -> int:
    """llama.cpp threads for the app: all cores but one (at most 8), unless the user asked for a number.

    Why: llama.cpp's threads busy-wait for each other; with one per core they compete with the UI thread and the
    Python thread driving the engine, and on a small, busy machine a generation measured 40x slower and the UI
    stalled for 100+ ms. Leaving one core free kept stalls near 20 ms on 2 cores.
    """
    import os

    return requested if requested > 0 else max(1, min(8, (os.cpu_count() or 2) - 1))


def _call_history() -> CallHistory:
    """The same persisted history of tool calls the command line uses, so drafting learns across sessions."""
    from localspec.models.paths import get_paths

    return CallHistory(get_paths().data_dir / "history" / "tool_calls.jsonl")


def _open_transcript() -> Transcript | None:
    """The agent's JSONL record of this session; a data folder we cannot write to must not stop the app."""
    try:
        return Transcript.open()
    except OSError:
        return None


class ChatSession:
    def __init__(self, options: AppOptions, settings: Settings | None = None) -> None:
        self.options = options
        self.settings = settings or load_config(options.config_path)
        self.toolbox = Toolbox(options.workspace, Policy(self.settings.approval))
        self.call_history = _call_history()  # earlier tool calls (the agent adds each finished one), for drafting
        self.totals = SessionView()
        self.info: PairInfo | None = None
        self._transcript = _open_transcript() if options.record else None
        self._messages: list[dict] = self._system()  # the conversation while no agent exists
        self._pair = None
        self._engine = None
        self._agent = None
        self._hints = None
        self._lock = threading.Lock()

    # -- models ---------------------------------------------------------------------------------------------------
    @property
    def loaded(self) -> bool:
        # `info` is set last in load(), after the engine, the agent and the warm-up: only then is a pair usable.
        return self._engine is not None and self.info is not None

    def select(self, pair: str | None = None, target: str | None = None, draft: str | None = None) -> Selection:
        """Which files to run (never downloads); ModelFileError when nothing is installed."""
        return resolve_selection(pair, target, draft, settings=self.settings)

    def initial_selection(self) -> Selection:
        o = self.options
        return self.select(o.pair, o.target, o.draft)

    def load(self, sel: Selection) -> PairInfo:
        """Load (or switch to) a pair. Slow for real models: call from a worker thread."""
        from localspec.runtime.context import ContextSettings
        from localspec.runtime.model import ModelSettings
        from localspec.runtime.pair import load_pair
        from localspec.speculative.builder import build_engine

        tuning = self.settings.tuning(sel.hints)
        ctx = ContextSettings(n_ctx=self.options.n_ctx, n_threads=app_threads(self.options.n_threads))
        drafters = [n for n in ("model", "schema", "history", "ngram") if self.settings.get(f"drafters.{n}")]
        with self._lock:
            self._close()
            pair = load_pair(sel.target, sel.draft, target=ModelSettings(n_gpu_layers=tuning.target_gpu_layers),
                             draft=ModelSettings(n_gpu_layers=tuning.draft_gpu_layers), ctx=ctx)
            try:
                self._engine = build_engine(pair, use_draft_model=self.settings.drafters.model,
                                            draft_max=tuning.draft_max, draft_p_min=tuning.draft_p_min,
                                            drafters=drafters, history=self.call_history)
                self._agent = self._new_agent(self._engine, sel.hints)
                self._warm_up(pair.target)
            except BaseException:
                pair.close()
                self._engine = self._agent = None
                raise
            self._pair, self._hints = pair, sel.hints
            self.info = describe(sel)
            return self.info

    def _warm_up(self, model) -> None:
        """Pay one-off costs now, while the app says "loading", not in the middle of the first reply: the chat
        template's compilation and the grammar engine's tokenizer for this model (about 0.25 s for SmolLM2, spent
        in native code that holds the interpreter lock, so the UI would freeze for that long)."""
        from localspec.chat.prompt import chat_prompt_tokens
        from localspec.speculative.grammar import GrammarConstraint, json_schema_grammar

        chat_prompt_tokens(model, self.history + [{"role": "user", "content": "hi"}],
                           tools=self._agent.tool_specs() or None)
        GrammarConstraint(model, json_schema_grammar(None))

    def close(self, timeout: float = -1) -> bool:
        """Free the models; False when a turn or load still held them after `timeout` seconds."""
        if not self._lock.acquire(timeout=timeout):
            return False
        try:
            self._close()
        finally:
            self._lock.release()
        return True

    def _close(self) -> None:
        if self._agent is not None:
            self._messages = self._agent.messages
        if self._pair is not None:
            self._pair.close()
        self._pair = self._engine = self._agent = self.info = None

    def shutdown(self, timeout: float = -1) -> bool:
        """At exit: free the models and close the JSONL transcript."""
        done = self.close(timeout)
        if self._transcript is not None:
            self._transcript.close()
        return done

    def apply_settings(self, settings: Settings) -> None:
        """New settings: approval mode now, sampling from the next turn, models and drafters on the next load."""
        self.settings = settings
        self.toolbox.policy.mode = settings.approval
        if self._agent is not None:
            self._agent.params = self._params(self._hints)
            self._agent.settings.params = self._agent.params

    # -- conversation ---------------------------------------------------------------------------------------------
    @property
    def history(self) -> list[dict]:
        """The conversation (chat-template messages, system prompt first)."""
        return self._agent.messages if self._agent is not None else self._messages

    def reset(self) -> None:
        with self._lock:
            if self._agent is not None:
                self._agent.reset()
            self._messages = self._system()

    def _system(self) -> list[dict]:
        from localspec.agent import DEFAULT_SYSTEM

        system = DEFAULT_SYSTEM if self.options.system_prompt is None else self.options.system_prompt
        return [{"role": "system", "content": system}] if system else []

    def _params(self, hints):
        from localspec.speculative.engine import GenParams
        from localspec.speculative.sampling import SamplingParams

        s = self.settings.sampling
        sampling = SamplingParams(temperature=s.temperature, top_k=s.top_k, top_p=s.top_p, min_p=s.min_p,
                                  seed=s.seed)
        return GenParams(max_tokens=self.options.max_tokens, sampling=sampling,
                         draft_max=self.settings.tuning(hints).draft_max)

    def _new_agent(self, engine, hints):
        from localspec.agent import Agent

        agent = Agent(engine, self.toolbox, system=None, params=self._params(hints),
                      call_max_tokens=self.options.max_tokens, transcript=self._transcript)
        agent.messages = self.history  # the conversation survives a change of pair
        return agent

    def run_turn(self, text: str, post: Post, cancel: threading.Event) -> None:
        """Answer one user message through the agent loop, reporting through `post`; never raises."""
        with self._lock:
            if self._agent is None:
                post(TurnFailed("no model is loaded: pick a pair in the models screen (F2)"))
                return
            relay = Relay(post, self._engine)
            try:
                result = self._agent.run(text, tool_choice=self.options.tool_choice, cancel=cancel,
                                         on_event=relay)
            except LocalspecError as exc:
                relay.flush()
                post(TurnFailed(str(exc)))
                return
            except Exception as exc:  # a bug must show as a message in the chat, not kill the app
                relay.flush()
                post(TurnFailed(f"generation failed: {type(exc).__name__}: {exc}"))
                return
            relay.flush()
            final = StatsView.of(result.stats)
            self.totals = self.totals.add(final, result.stats.generation_s)
            if result.error:
                post(TurnFailed(result.error))
            post(TurnDone(final, result.stats.generation_s, cancelled=result.finish_reason == "cancelled",
                          finish_reason=result.finish_reason))


class Relay:
    """Agent events -> TurnEvents: text batched per kind, tool calls and notices passed on, live stats attached.

    Live figures come from the engine's in-progress Stats (a generation's own timing is only set at its end), timed
    from the first token of that generation.
    """

    def __init__(self, post: Post, engine) -> None:
        self.post = post
        self.engine = engine
        self.batch = Batcher(post, self.live)
        self._gen = None  # the engine Stats object of the generation in progress
        self._gen_start = 0.0

    def live(self) -> StatsView | None:
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
            if self.engine.last_stats is not self._gen:
                self._gen, self._gen_start = self.engine.last_stats, time.perf_counter()
            self.batch.add(ev.text, ev.origin, kind=ev.kind, counts=ev.token >= 0)
        elif kind == "tool_call":
            self.batch.flush(pause=True)
            self.post(ToolStarted(ev.call_id, ev.name, ev.arguments))
        elif kind == "tool_result":
            r = ev.result
            self.post(ToolFinished(ev.call_id, r.ok, r.content, r.error))
        elif kind == "notice":
            self.batch.flush(pause=True)
            self.post(Notice(ev.message))
