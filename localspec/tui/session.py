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
from localspec.agent.history import call_history
from localspec.errors import LocalspecError
from localspec.models.config import Settings, load_config
from localspec.models.resolve import Selection, resolve_selection
from localspec.speculative import registry
from localspec.tools import Policy, Toolbox
from localspec.tui.livestats import SessionView, StatsView
from localspec.tui.options import AppOptions
from localspec.tui.turn import Batcher, ToolFinished, ToolStarted, TurnDone, TurnEvent, TurnFailed, TurnNotice

Post = Callable[[TurnEvent], None]


@dataclass(frozen=True)
class PairInfo:
    """What the UI shows about the loaded pair."""

    label: str
    target: Path
    draft: Path | None
    pair: str | None
    demo: bool
    warning: str | None = None  # e.g. no chat template: ChatML stands in (shown in the chat once loaded)


def describe(sel: Selection, warning: str | None = None) -> PairInfo:
    label = "demo" if sel.demo else sel.pair or sel.target.name
    if sel.pair is None and sel.draft is not None:
        label += " + " + sel.draft.name
    return PairInfo(label, sel.target, sel.draft, sel.pair, sel.demo, warning)


def app_threads(requested: int = 0) -> int:
    """llama.cpp threads for the app: all cores but one (at most 8), unless the user asked for a number.

    Why: llama.cpp's threads busy-wait for each other; with one per core they compete with the UI thread and the
    Python thread driving the engine, and on a small, busy machine a generation measured 40x slower and the UI
    stalled for 100+ ms. Leaving one core free kept stalls near 20 ms on 2 cores.
    """
    import os

    return requested if requested > 0 else max(1, min(8, (os.cpu_count() or 2) - 1))


def _open_conversations():
    """The conversation store (saved chats); a data folder we cannot write to must not stop the app."""
    from localspec.conversations import ConversationError, open_store

    try:
        return open_store()
    except ConversationError:
        return None


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
        self.toolbox = Toolbox(options.workspace, Policy(self.settings.approval),
                               env_allow=self.settings.tools.env_allow_names())
        self.mcp = None  # the MCP servers (localspec.mcp.McpTools) once start_tools() ran; None: none configured
        # The same persisted history of tool calls the command line uses, so drafting learns across sessions.
        self.call_history = call_history()  # the agent adds each finished call
        self.totals = SessionView()
        self.info: PairInfo | None = None
        self._transcript = _open_transcript() if options.record else None
        self._messages: list[dict] = self._system()  # the conversation while no agent exists
        self._pair = None
        self._engine = None
        self._agent = None
        self._hints = None
        self._lock = threading.Lock()
        self.conversations = _open_conversations() if options.record else None  # None: chats are not saved
        self._resumed = None  # the saved conversation reopened at start (its pair is preferred)
        self._recorder = self._new_recorder()
        if options.resume and self.conversations is not None:
            self._resumed = self.open_conversation(options.resume)

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
        resumed = self._resumed_selection() if o.pair is None and o.target is None else None
        return resumed or self.select(o.pair, o.target, o.draft)

    def _resumed_selection(self) -> Selection | None:
        """A reopened conversation continues on its own pair while that is still installed."""
        params = self._resumed.params if self._resumed is not None else {}
        try:
            if params.get("pair_name"):
                return self.select(pair=params["pair_name"])
            if params.get("target") and Path(params["target"]).is_file():
                draft = params.get("draft")
                return self.select(target=params["target"], draft=draft if draft and Path(draft).is_file() else None)
        except LocalspecError:
            pass
        return None

    def load(self, sel: Selection) -> PairInfo:
        """Load (or switch to) a pair. Slow for real models: call from a worker thread."""
        from localspec.runtime.context import ContextSettings
        from localspec.runtime.model import ModelSettings
        from localspec.runtime.pair import load_pair
        from localspec.speculative.builder import build_engine
        from localspec.speculative.config import DraftingConfig

        tuning = self.settings.tuning(sel.hints)
        ctx = ContextSettings(n_ctx=self.options.n_ctx, n_threads=app_threads(self.options.n_threads))
        drafters = list(registry.enabled(self.settings.get))
        with self._lock:
            self._close()
            pair = load_pair(sel.target, sel.draft, target=ModelSettings(n_gpu_layers=tuning.target_gpu_layers),
                             draft=ModelSettings(n_gpu_layers=tuning.draft_gpu_layers), ctx=ctx)
            try:
                from localspec.chat.template_file import apply_chat_template

                # Before the engine and agent: they read the template (tool-call format, prompts).
                warning = apply_chat_template(pair.target, self.options.chat_template
                                              or self.settings.chat_templates.get(sel.pair or ""))
                self._engine = build_engine(pair, DraftingConfig(drafters=tuple(drafters), draft_max=tuning.draft_max,
                                                                 draft_p_min=tuning.draft_p_min),
                                            history=self.call_history)
                self._agent = self._new_agent(self._engine, sel.hints)
                self._warm_up(pair.target)
            except BaseException:
                pair.close()
                self._engine = self._agent = None
                raise
            self._pair, self._hints = pair, sel.hints
            self.info = describe(sel, warning)
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

    def start_tools(self, notice: Callable[[str], None]) -> None:
        """Start the MCP servers (mcp.json or --mcp-config) in the background; failures reach `notice` as one line."""
        from localspec.mcp import attach_servers

        try:
            self.mcp = attach_servers(self.toolbox, self.options.mcp_config, on_notice=notice)
        except LocalspecError as exc:  # a broken mcp.json: the app runs with the built-in tools
            notice(f"MCP servers not started: {exc}")

    def shutdown(self, timeout: float = -1) -> bool:
        """At exit: free the models, close the JSONL transcript and the conversation store."""
        if self.mcp is not None:
            self.mcp.close()  # stops the servers' processes
        done = self.close(timeout)
        if self._transcript is not None:
            self._transcript.close()
        if done and self.conversations is not None:
            self.conversations.close()
        return done

    def apply_settings(self, settings: Settings) -> None:
        """New settings: approval mode now, sampling from the next turn, models and drafters on the next load."""
        self.settings = settings
        self.toolbox.policy.mode = settings.approval
        self.toolbox.env_allow = tuple(settings.tools.env_allow_names())
        self._thinking = None  # the saved default wins over an earlier Ctrl+R
        if self._agent is not None:
            self._agent.params = self._params(self._hints)  # Agent.params is its TurnSettings' params
            self._agent.thinking = self.thinking

    # -- conversation ---------------------------------------------------------------------------------------------
    @property
    def history(self) -> list[dict]:
        """The conversation (chat-template messages, system prompt first)."""
        return self._agent.messages if self._agent is not None else self._messages

    def reset(self) -> None:
        """A new conversation: the next message starts a new saved chat, and the session totals restart."""
        with self._lock:
            if self._agent is not None:
                self._agent.reset()
            self._messages = self._system()
            self._recorder = self._new_recorder()
            self.totals = SessionView()
            self.temperature = self.max_tokens_override = None  # a new conversation starts from the defaults

    # -- reasoning models (Ctrl+R) ------------------------------------------------------------------------------------
    _thinking: bool | None = None  # None: config.toml's reasoning.thinking

    @property
    def thinking(self) -> bool:
        """Whether reasoning models think before answering (Qwen3's enable_thinking; /no_think otherwise)."""
        return self.settings.reasoning.thinking if self._thinking is None else self._thinking

    @thinking.setter
    def thinking(self, on: bool) -> None:
        self._thinking = on
        if self._agent is not None:
            self._agent.thinking = on

    # -- this conversation's own settings (the settings screen's first section) --------------------------------------
    temperature: float | None = None  # None: config.toml's sampling.temperature
    max_tokens_override: int | None = None  # None: the app's --max-tokens (AppOptions.max_tokens)

    @property
    def max_tokens(self) -> int:
        """The most tokens one model turn of this conversation may write."""
        return self.max_tokens_override or self.options.max_tokens

    @property
    def system_prompt(self) -> str:
        history = self.history
        return history[0].get("content") or "" if history and history[0].get("role") == "system" else ""

    def set_conversation_settings(self, *, system_prompt: str, temperature: float | None,
                                  max_tokens: int | None) -> None:
        """This conversation's system prompt ("" for none), temperature and token limit (None: the defaults);
        they apply from the next message."""
        with self._lock:
            history = self.history
            rest = history[1:] if history and history[0].get("role") == "system" else history
            history[:] = ([{"role": "system", "content": system_prompt}] if system_prompt else []) + rest
            self.temperature, self.max_tokens_override = temperature, max_tokens
            if self._agent is not None:
                self._agent.params = self._params(self._hints)

    # -- saved conversations --------------------------------------------------------------------------------------
    @property
    def conversation_id(self) -> str | None:
        """The saved conversation this chat records into (None until its first message is saved)."""
        return self._recorder.id if self._recorder is not None else None

    def open_conversation(self, ref: str):
        """Continue a saved conversation: its messages become the history and the session totals restart."""
        from localspec.conversations import ConversationError

        if self.conversations is None:
            raise ConversationError("conversations are not being saved in this session")
        conv = self.conversations.get(ref)
        with self._lock:
            history = conv.history()
            if self._agent is not None:
                self._agent.messages = history
            self._messages = history
            self._recorder = self._new_recorder(conv.id)
            self.totals = SessionView()
            # Its own temperature and token limit come back with it (the system prompt is in the history).
            temperature, limit = conv.params.get("temperature_override"), conv.params.get("max_tokens_override")
            self.temperature = float(temperature) if isinstance(temperature, (int, float)) else None
            self.max_tokens_override = limit if isinstance(limit, int) and limit > 0 else None
            if self._agent is not None:
                self._agent.params = self._params(self._hints)
        return conv

    def delete_conversation(self, cid: str) -> None:
        """Delete a saved conversation; deleting the open one starts a new conversation."""
        if self.conversations is not None:
            self.conversations.delete(cid)
        if cid == self.conversation_id:
            self.reset()

    def _new_recorder(self, cid: str | None = None):
        if self.conversations is None:
            return None
        from localspec.agent.record import ConversationRecorder

        return ConversationRecorder(self.conversations, cid, meta=self._conversation_meta)

    def _conversation_meta(self) -> dict:
        """What a saved conversation runs with (refreshed with each user message)."""
        from dataclasses import asdict

        info, history = self.info, self.history
        system = history[0].get("content") if history and history[0].get("role") == "system" else None
        params = {"pair_name": info.pair if info else None, "target": str(info.target) if info else None,
                  "draft": str(info.draft) if info and info.draft else None,
                  "approval": self.toolbox.policy.mode, "tool_choice": self.options.tool_choice,
                  "temperature_override": self.temperature, "max_tokens_override": self.max_tokens_override}
        if self._agent is not None:
            params.update(asdict(self._agent.params))  # max_tokens, sampling, draft_max, ...
        return {"pair": (info.pair or info.label) if info else None, "workspace": str(self.options.workspace),
                "system": system, "params": params}

    def _system(self) -> list[dict]:
        from localspec.agent import DEFAULT_SYSTEM

        system = DEFAULT_SYSTEM if self.options.system_prompt is None else self.options.system_prompt
        return [{"role": "system", "content": system}] if system else []

    def _params(self, hints):
        from localspec.speculative.engine import GenParams
        from localspec.speculative.sampling import SamplingParams

        s = self.settings.sampling
        temperature = s.temperature if self.temperature is None else self.temperature
        sampling = SamplingParams(temperature=temperature, top_k=s.top_k, top_p=s.top_p, min_p=s.min_p, seed=s.seed)
        return GenParams(max_tokens=self.max_tokens, sampling=sampling,
                         draft_max=self.settings.tuning(hints).draft_max)

    def _new_agent(self, engine, hints):
        from localspec.agent import Agent

        agent = Agent(engine, self.toolbox, system=None, params=self._params(hints),
                      call_max_tokens=self.options.max_tokens, transcript=self._transcript)
        agent.messages = self.history  # the conversation survives a change of pair
        agent.thinking = self.thinking
        return agent

    def run_turn(self, text: str, post: Post, cancel: threading.Event) -> None:
        """Answer one user message through the agent loop, reporting through `post`; never raises."""
        with self._lock:
            if self._agent is None:
                post(TurnFailed("no model is loaded: pick a pair in the models screen (F2)"))
                return
            if self.mcp is not None:
                self.mcp.wait()  # servers still starting: their tools join this turn
            relay = Relay(post, self._engine)
            recorder = self._recorder
            saving = recorder is not None and recorder.error is None
            try:
                result = self._agent.run(text, tool_choice=self.options.tool_choice, cancel=cancel,
                                         on_event=recorder.wrap(relay) if recorder is not None else relay)
            except LocalspecError as exc:
                relay.flush()
                post(TurnFailed(str(exc)))
                return
            except Exception as exc:  # a bug must show as a message in the chat, not kill the app
                relay.flush()
                post(TurnFailed(f"generation failed: {type(exc).__name__}: {exc}"))
                return
            relay.flush()
            if saving and recorder.error:
                post(TurnNotice(f"this conversation is no longer being saved: {recorder.error}"))
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
            self.post(TurnNotice(ev.message))
