"""The chat session behind the app: settings, the loaded model pair, the engine, the toolbox and the conversation.

Plain Python (no Textual): the app calls load() and run_turn() from worker threads and receives TurnEvents through
a `post` callable. One lock serialises everything that touches the engine (it is not thread-safe).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from localspec.agent.drafting_memory import StoredGenerations, call_history
from localspec.errors import LocalspecError
from localspec.launch.resolve import resolve_selection
from localspec.models.selection import Selection
from localspec.runtime.compute_thread import ComputeThread
from localspec.settings.config_toml import Settings, load_config
from localspec.tools import Policy, Toolbox
from localspec.tui.launch_options import AppOptions
from localspec.tui.livestats import SessionView, StatsView
from localspec.tui.turn import (
    Batcher,
    ReadingPrompt,
    ToolFinished,
    ToolStarted,
    TurnDone,
    TurnEvent,
    TurnFailed,
    TurnNotice,
)

if TYPE_CHECKING:
    from localspec.agent import Agent
    from localspec.mcp import McpTools
    from localspec.remote.turns import RemoteTurns
    from localspec.runtime.pair import LoadedPair
    from localspec.speculative import SpecEngine, Stats

Post = Callable[[TurnEvent], object]  # what it returns is not used


@dataclass(frozen=True)
class PairInfo:
    """What the UI shows about the loaded pair."""

    label: str
    target: Path | None  # None: a remote server generates
    draft: Path | None
    pair: str | None
    demo: bool
    warning: str | None = None  # e.g. no chat template: ChatML stands in (shown in the chat once loaded)
    remote: str | None = None  # the server's API root when an OpenAI-compatible server generates


def describe(sel: Selection, warning: str | None = None) -> PairInfo:
    label = "demo" if sel.demo else sel.pair or sel.target.name
    if sel.pair is None and sel.draft is not None:
        label += " + " + sel.draft.name
    return PairInfo(label, sel.target, sel.draft, sel.pair, sel.demo, warning)


def describe_remote(turns) -> PairInfo:
    return PairInfo(turns.label, None, None, None, False, remote=turns.backend.base_url)


def _open_conversations():
    """The conversation store (saved chats); a data folder we cannot write to must not stop the app."""
    from localspec.conversations import ConversationError, open_store

    try:
        return open_store()
    except ConversationError:
        return None


class ChatSession:
    def __init__(self, options: AppOptions, settings: Settings | None = None) -> None:
        self.options = options
        self.settings = settings or load_config(options.config_path)
        self.toolbox = Toolbox(options.workspace, Policy(self.settings.approval),
                               env_allow=self.settings.tools.env_allow_names())
        self.mcp: McpTools | None = None  # the MCP servers once start_tools() ran; None: none configured
        self.totals = SessionView()
        self.info: PairInfo | None = None
        self._messages: list[dict] = self._system()  # the conversation while no agent exists
        self._pair: LoadedPair | None = None
        self._engine: SpecEngine | None = None
        self._remote: RemoteTurns | None = None  # the remote backend's turn provider when a server generates
        self._agent: Agent | None = None
        self._selection: Selection | None = None  # the pair loaded last (its RunConfig is re-resolved per turn)
        self._lock = threading.Lock()
        # Loads and turns run on one thread, whichever worker asks (runtime/compute_thread.py says why).
        self._compute = ComputeThread("localspec-engine")
        self.conversations = _open_conversations() if options.record else None  # None: chats are not saved
        # The same stored history of tool calls the command line uses, so drafting learns across sessions; the
        # agent adds each finished call, kept with the conversation it belongs to.
        self.call_history = call_history(self.conversations, lambda: self.conversation_id)
        # ... and the replies generated before, for recall (a regenerated reply, a conversation carried on).
        self.generations = (StoredGenerations(self.conversations, lambda: self.conversation_id)
                            if self.conversations is not None else None)
        self._resumed = None  # the saved conversation reopened at start (its pair is preferred)
        self._tools_on = self.default_tools_on()
        self.next_tool: str | None = None  # a tool the next message must call (/tool NAME, the palette)
        self._recorder = self._new_recorder()
        if options.resume and self.conversations is not None:
            self._resumed = self.open_conversation(options.resume)

    # -- models ---------------------------------------------------------------------------------------------------
    @property
    def loaded(self) -> bool:
        # `info` is set last in load(), after the engine, the agent and the warm-up: only then is a pair usable.
        return self._agent is not None and self.info is not None

    @property
    def selection(self) -> Selection | None:
        """The local model files loaded now (None: none, or a remote server generates)."""
        return self._selection if self._remote is None else None

    def remote_config(self):
        """The OpenAI-compatible server to use (--backend openai, or backend.kind in the settings), or None."""
        from localspec.launch.backend_choice import resolve_remote

        return resolve_remote(self.options.flags, self.settings)

    def select(self, pair: str | None = None, target: str | None = None, draft: str | None = None) -> Selection:
        """Which files to run (never downloads); ModelFileError when nothing is installed."""
        return resolve_selection(pair, target, draft, settings=self.settings)

    def initial_selection(self):
        """What to load at start: the remote server when one is configured, else a Selection of model files."""
        remote = self.remote_config()
        if remote is not None:
            return remote
        f = self.options.flags
        resumed = self._resumed_selection() if f.pair is None and f.target is None else None
        if resumed is not None:
            return resumed
        from localspec.launch.run_config import select

        return select(f, self.settings)

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

    def config(self, sel: Selection | None = None):
        """The RunConfig for a pair: the app's flags, config.toml and the pair's hints, resolved as every front end
        resolves them (launch/run_config.py), with a core left free for the UI unless threads are set."""
        from localspec.launch.run_config import resolve_config

        sel = sel or self._selection
        return resolve_config(self.options.flags, self.settings, selection=sel, interactive=True,
                              max_tokens=self.options.max_tokens)

    def load(self, sel) -> PairInfo:
        """Load (or switch to) a pair, or connect to a remote server (a launch.remote.RemoteConfig). Slow for real
        models: call from a worker thread."""
        from localspec.launch.backend_choice import RemoteConfig

        if isinstance(sel, RemoteConfig):
            return self._load_remote(sel)
        return self._compute.call(self._load_local, sel)

    def _load_local(self, sel: Selection) -> PairInfo:
        from localspec.launch.open import open_engine

        config = self.config(sel)
        with self._lock:
            self._close()
            opened = open_engine(config, history=self.call_history, generations=self.generations)
            try:
                self._engine = opened.engine
                self._selection = sel
                self._agent = self._new_agent(self._engine)
                self._warm_up(opened.pair.target)
            except BaseException:
                opened.close()
                self._engine = self._agent = self._selection = None
                raise
            self._pair = opened.pair
            self.info = describe(sel, opened.warning)
            return self.info

    def _load_remote(self, remote) -> PairInfo:
        """Turns on an OpenAI-compatible server: asked for its model now (an unreachable server is said at once,
        not at the first message)."""
        from localspec.remote.turns import open_turns

        with self._lock:
            self._close()
            turns = open_turns(remote)
            turns.backend.resolve_model()
            self._remote = turns
            self._agent = self._new_agent(turns)
            self.info = describe_remote(turns)
            return self.info

    def _warm_up(self, model) -> None:
        """Pay one-off costs now, while the app says "loading", not in the middle of the first reply: the chat
        template's compilation and the grammar engine's tokenizer for this model (about 0.25 s for SmolLM2, spent
        in native code that holds the interpreter lock, so the UI would freeze for that long)."""
        from localspec.prompting.prompt import chat_prompt_tokens
        from localspec.speculative import GrammarConstraint, json_schema_grammar

        assert self._agent is not None  # made just before, in _load_local
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
        self._pair = self._engine = self._remote = self._agent = self.info = None

    def start_tools(self, notice: Callable[[str], None]) -> None:
        """Start the MCP servers (mcp.json or --mcp-config) in the background; failures reach `notice` as one line."""
        from localspec.mcp import attach_servers

        try:
            self.mcp = attach_servers(self.toolbox, self.options.mcp_config, on_notice=notice)
        except LocalspecError as exc:  # a broken mcp.json: the app runs with the built-in tools
            notice(f"MCP servers not started: {exc}")

    def shutdown(self, timeout: float = -1) -> bool:
        """At exit: free the models and close the conversation store."""
        if self.mcp is not None:
            self.mcp.close()  # stops the servers' processes
        done = self.close(timeout)
        if done:
            self._compute.close()
            if self.conversations is not None:
                self.conversations.close()
        return done

    def apply_settings(self, settings: Settings) -> None:
        """New settings: approval mode now, sampling from the next turn, models and drafters on the next load."""
        self.settings = settings
        self.toolbox.policy.mode = settings.approval
        self.toolbox.env_allow = tuple(settings.tools.env_allow_names())
        self._thinking = None  # the saved default wins over an earlier Ctrl+R
        if self._agent is not None:
            self._agent.params = self._params()
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
            self.tools_on = self.default_tools_on()
            self.next_tool = None

    # -- tools on or off for this chat (F6, /tools on|off) -----------------------------------------------------------
    def default_tools_on(self) -> bool:
        """A new chat's tools: off with --no-tools (or --tool-choice none), else the settings' tools.enabled."""
        return self.options.tools_on and self.options.tool_choice != "none" and self.settings.tools.enabled

    @property
    def tools_on(self) -> bool:
        return self._tools_on

    @tools_on.setter
    def tools_on(self, on: bool) -> None:
        """Off, the model sees no tool definitions: a short prompt, a fast first token, no calls."""
        self._tools_on = on
        if self._agent is not None:
            self._agent.tools_on = on

    def tool_names(self) -> list[str]:
        """The tools the model can be offered now (built-in and MCP servers', without those the policy refuses)."""
        return [s["function"]["name"] for s in self.toolbox.specs(available_only=True)]

    # -- reasoning models (Ctrl+R) ------------------------------------------------------------------------------------
    _thinking: bool | None = None  # None: config.toml's reasoning.thinking

    @property
    def thinking(self) -> bool:
        """Whether reasoning models think before answering (Qwen3's enable_thinking; /no_think otherwise)."""
        if self._thinking is not None:
            return self._thinking
        flag = self.options.flags.thinking  # --thinking / --no-thinking when the app was started
        return self.settings.reasoning.thinking if flag is None else flag

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
                self._agent.params = self._params()

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
            tools = conv.params.get("tools")
            self.tools_on = tools if isinstance(tools, bool) else self.default_tools_on()
            self.next_tool = None
            if self._agent is not None:
                self._agent.params = self._params()
            # The panel's session totals are the conversation's own, counted from its recorded turns.
            self.totals = totals_of(self.conversations.turns(conv.id))
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
                  "temperature_override": self.temperature, "max_tokens_override": self.max_tokens_override,
                  "tools": self.tools_on}
        if info is not None and info.remote:
            params.update(backend="openai", base_url=info.remote)
        if self._agent is not None:
            params.update(asdict(self._agent.params))  # max_tokens, sampling, draft_max, ...
        return {"pair": (info.pair or info.label) if info else None, "workspace": str(self.options.workspace),
                "system": system, "params": params}

    def _system(self) -> list[dict]:
        from localspec.agent import DEFAULT_SYSTEM

        system = DEFAULT_SYSTEM if self.options.system_prompt is None else self.options.system_prompt
        return [{"role": "system", "content": system}] if system else []

    def _params(self):
        """The generation parameters of the next turn: the resolved config (flags, then the settings as they are
        now), with this conversation's own temperature and token limit on top."""
        from dataclasses import replace

        from localspec.launch.run_config import resolve_params

        if self._selection is not None and self._remote is None:
            params = self.config().params
        else:  # a remote server, or no pair yet: the same flags and settings, without model files
            params = resolve_params(self.options.flags, self.settings, max_tokens=self.options.max_tokens)[0]
        sampling = params.sampling if self.temperature is None else replace(params.sampling,
                                                                            temperature=self.temperature)
        return replace(params, max_tokens=self.max_tokens, sampling=sampling)

    def _new_agent(self, turns):
        """An agent on the local engine or the remote backend's turns (the same loop, tools and approvals)."""
        from localspec.agent import Agent

        agent = Agent(turns, self.toolbox, system=None, params=self._params(),
                      call_max_tokens=self.options.max_tokens)
        agent.messages = self.history  # the conversation survives a change of pair
        agent.thinking = self.thinking
        agent.tools_on = self.tools_on
        return agent

    def run_turn(self, text: str, post: Post, cancel: threading.Event, *, tool: str | None = None) -> None:
        """Answer one user message through the agent loop, reporting through `post`; never raises. `tool`: a tool
        the first step must call (else the one /tool NAME set for the next message, else the app's choice)."""
        self._compute.call(self._run_turn, text, post, cancel, tool)

    def _run_turn(self, text: str, post: Post, cancel: threading.Event, tool: str | None) -> None:
        with self._lock:
            if self._agent is None:
                post(TurnFailed("no model is loaded: pick a pair in the models screen (F2)"))
                return
            if self.mcp is not None:
                self.mcp.wait()  # servers still starting: their tools join this turn
            choice = tool or self.next_tool or self.options.tool_choice
            self.next_tool = None
            if choice not in ("auto", "none") and not self.tools_on:
                self.tools_on = True  # forcing a tool means offering the tools, for this chat from now on
            relay = Relay(post, self._engine)
            recorder = self._recorder
            saving = recorder is not None and recorder.error is None
            try:
                result = self._agent.run(text, tool_choice=choice, cancel=cancel,
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
            final = StatsView.of(result.stats, first_token_s=result.first_token_s)
            self.totals = self.totals.add(final, result.stats.generation_s)
            if result.error:
                post(TurnFailed(result.error))
            post(TurnDone(final, result.stats.generation_s, cancelled=result.finish_reason == "cancelled",
                          finish_reason=result.finish_reason))

    # -- editing the conversation (regenerate, edit and resend, delete) ---------------------------------------------
    def user_positions(self) -> list[int]:
        """Where the user's messages are in the history."""
        return [i for i, m in enumerate(self.history) if m.get("role") == "user"]

    def exchange(self, k: int) -> tuple[int, int]:
        """The history span of the k-th exchange (0-based; negative from the end): its user message and every
        message of the reply, up to the next user message."""
        users = self.user_positions()
        if not users or not -len(users) <= k < len(users):
            raise LocalspecError("there is no such message in this conversation")
        k %= len(users)
        stop = users[k + 1] if k + 1 < len(users) else len(self.history)
        return users[k], stop

    def take_back(self, k: int) -> str:
        """Remove the k-th exchange and everything after it; returns its user message's text (regenerate sends it
        again, edit sends it changed)."""
        with self._lock:
            start, _ = self.exchange(k)
            text = str(self.history[start].get("content") or "")
            self._remove(start, None)
            return text

    def delete_exchange(self, k: int) -> int:
        """Delete the k-th exchange (its user message and the reply to it): what the model sees stays a valid
        conversation. Returns how many messages went."""
        with self._lock:
            start, stop = self.exchange(k)
            self._remove(start, stop)
            return stop - start

    def _remove(self, start: int, stop: int | None) -> None:
        history = self.history
        end = len(history) if stop is None else stop
        offset = 1 if history and history[0].get("role") == "system" else 0  # the store keeps the system apart
        recorder = self._recorder
        if recorder is not None and recorder.id is not None and recorder.error is None:
            from localspec.conversations import ConversationError

            assert self.conversations is not None  # the recorder records into it (_new_recorder)
            try:
                self.conversations.delete_messages(recorder.id, start - offset, end - offset)
            except ConversationError as exc:
                recorder.error = str(exc)
        del history[start:end]


def totals_of(turns: list[dict]) -> SessionView:
    """The session totals of a reopened conversation, from its recorded turns' statistics."""
    view = SessionView()
    for turn in turns:
        st = turn.get("stats") or {}
        times = st.get("time_s") or {}
        gen_s = max(float(st.get("wall_s") or 0.0) - float(times.get("prefill") or 0.0), 0.0)
        view = view.add(StatsView(generated=int(st.get("generated_tokens") or 0), drafted=int(st.get("drafted") or 0),
                                  accepted=int(st.get("accepted") or 0),
                                  target_passes=int(st.get("target_passes") or 0)), gen_s)
    return view


class Relay:
    """Agent events -> TurnEvents: text batched per kind, tool calls and notices passed on, live stats attached.

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
        if kind == "prompt":
            self.post(ReadingPrompt(ev.done, ev.total, ev.rate))
        elif kind == "text":
            last = self.engine.last_stats if self.engine is not None else None
            if last is not self._gen or last is None:
                self._gen, self._gen_start = last, time.perf_counter()
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
