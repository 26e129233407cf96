"""One agent session, whichever front end opens it: the app (tui/session.py adds only what is about the screen) and
`run --tools` (commands/agent_run.py); `serve` opens and warms up its backend the same way (agent/backend.py).

A session holds the settings, the toolbox and its MCP servers, the conversation store with the recorder that saves
the conversation as it happens and what drafting remembers of earlier sessions (the stored tool calls and
generations), the backend (a local pair or an OpenAI-compatible server, loaded and warmed up) and the Agent on it.
Editing the conversation (regenerate, edit, delete) changes the history and the saved copy together
(conversations/editing.py). One lock serialises everything that touches the engine (it is not thread-safe).
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Callable

from localspec.agent.drafting_memory import StoredGenerations, call_history
from localspec.agent.events import EventHandler
from localspec.agent.loop import DEFAULT_SYSTEM, Agent
from localspec.agent.outcome import AgentResult
from localspec.agent.record import ConversationRecorder
from localspec.conversations import Conversation, ConversationError, ConversationStore, open_store
from localspec.conversations import editing
from localspec.errors import LocalspecError
from localspec.agent.backend import Backend, PairInfo, open_local, open_remote
from localspec.launch.backend_choice import RemoteConfig, resolve_remote
from localspec.launch.flags import RunFlags
from localspec.launch.resolve import resolve_selection
from localspec.launch.run_config import MAX_TOKENS, RunConfig, resolve_config, resolve_params, select
from localspec.mcp import McpTools, attach_servers
from localspec.models.selection import Selection
from localspec.settings.config_toml import Settings, load_config
from localspec.speculative import GenParams
from localspec.tools import Approver, Policy, Toolbox


@dataclass
class SessionOptions:
    """What one session was started with (command-line choices; settings live in config.toml)."""

    # Which model and how it runs, drafts and samples: the flags every front end takes.
    flags: RunFlags = field(default_factory=RunFlags)
    workspace: Path = field(default_factory=Path.cwd)  # where tools read, write and run
    config_path: Path | None = None  # None: the user's config.toml
    system_prompt: str | None = None  # None: the agent's default; "" for none
    tool_choice: str = "auto"  # first step of each turn: auto | required | none | a tool name (agent semantics)
    tools_on: bool = True  # new chats offer the tools (False: --no-tools; the settings' tools.enabled decides too)
    record: bool = True  # save the conversation (and its tool calls, for drafting) in the store, in the data folder
    resume: str | None = None  # a saved conversation's ID to continue (--resume ID, --continue)
    mcp_config: Path | None = None  # MCP servers (--mcp-config FILE); None: mcp.json in the config folder
    tool_names: tuple[str, ...] | None = None  # the tools offered (None: every tool the toolbox has)
    max_steps: int = 8  # most model turns in one answer
    call_max_tokens: int | None = None  # most tokens in one tool call; None: max_tokens
    default_max_tokens: int = MAX_TOKENS  # one model turn's limit unless --max-tokens says otherwise
    interactive: bool = False  # a UI shares the machine: leave it a core unless threads are set

    @property
    def max_tokens(self) -> int:
        """The most tokens one model turn may write, unless the conversation sets its own."""
        return self.flags.max_tokens or self.default_max_tokens


NOTHING_LOADED: dict = {"pair": None, "params": {"pair_name": None, "target": None, "draft": None}}


def _open_conversations() -> tuple[ConversationStore | None, str | None]:
    """The conversation store, or (None, why): a data folder we cannot write to must not stop a session."""
    try:
        return open_store(), None
    except ConversationError as exc:
        return None, str(exc)


class AgentSession:
    """`policy` and `approver` decide tool calls (default: the settings' approval mode, and nobody to ask)."""

    def __init__(self, options: SessionOptions, settings: Settings | None = None, *, policy: Policy | None = None,
                 approver: Approver | None = None) -> None:
        self.options = options
        self.settings = settings or load_config(options.config_path)
        self.toolbox = Toolbox(options.workspace, policy or Policy(self.settings.approval), approver,
                               env_allow=self.settings.tools.env_allow_names())
        self.mcp: McpTools | None = None  # the MCP servers once start_mcp() ran; None: none configured
        self.backend: Backend | None = None
        self.agent: Agent | None = None
        self.selection: Selection | None = None  # the local files loaded last (None: none, or a server generates)
        self.extra_meta: dict = {}  # what a front end saves with the conversation besides the session's own
        self._messages: list[dict] = self._system()  # the conversation while no agent exists
        self._lock = threading.RLock()
        # None: chats are not saved (or cannot be: store_error says why).
        self.conversations, self.store_error = _open_conversations() if options.record else (None, None)
        # The stored history of tool calls, so drafting learns across sessions; the agent adds each finished call,
        # kept with the conversation it belongs to ...
        self.call_history = call_history(self.conversations, lambda: self.conversation_id)
        # ... and the replies generated before, for recall (a regenerated reply, a conversation carried on).
        self.generations = (StoredGenerations(self.conversations, lambda: self.conversation_id)
                            if self.conversations is not None else None)
        self._resumed: Conversation | None = None  # the saved conversation reopened at start (its pair is preferred)
        self._tools_on = self.default_tools_on()
        self.recorder = self._new_recorder()
        if options.resume and self.conversations is not None:
            self.resume(self.conversations.get(options.resume), record=True)

    # -- the backend ------------------------------------------------------------------------------------------------
    @property
    def loaded(self) -> bool:
        # The backend is set last in load(), after the agent and the warm-up: only then is it usable.
        return self.agent is not None and self.backend is not None

    @property
    def info(self) -> PairInfo | None:
        return self.backend.info if self.backend is not None else None

    @property
    def engine(self):
        return self.backend.engine if self.backend is not None else None

    @property
    def pair(self):
        return self.backend.pair if self.backend is not None else None

    def remote_config(self) -> RemoteConfig | None:
        """The OpenAI-compatible server to use (--backend openai, or backend.kind in the settings), or None."""
        return resolve_remote(self.options.flags, self.settings)

    def select(self, pair: str | None = None, target: str | None = None, draft: str | None = None) -> Selection:
        """Which files to run (never downloads); ModelFileError when nothing is installed."""
        return resolve_selection(pair, target, draft, settings=self.settings)

    def initial_selection(self) -> Selection | RemoteConfig:
        """What to load at start: the remote server when one is configured, else the files the flags name, else the
        reopened conversation's own pair, else the default."""
        remote = self.remote_config()
        if remote is not None:
            return remote
        f = self.options.flags
        resumed = self._resumed_selection() if f.pair is None and f.target is None else None
        return resumed if resumed is not None else select(f, self.settings)

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

    def config(self, sel: Selection | None = None) -> RunConfig:
        """The RunConfig for a pair: the session's flags, config.toml and the pair's hints, resolved as every front
        end resolves them (launch/run_config.py)."""
        return resolve_config(self.options.flags, self.settings, selection=sel or self.selection,
                              interactive=self.options.interactive, max_tokens=self.options.max_tokens)

    def load(self, sel: Selection | RemoteConfig) -> PairInfo:
        """Load (or switch to) a pair, or connect to a remote server. Slow for real models: a UI calls it from a
        worker thread."""
        with self._lock:
            self._close_backend()
            if isinstance(sel, RemoteConfig):
                self.selection = None
                backend = open_remote(sel)
            else:
                self.selection = sel
                try:
                    backend = open_local(self.config(sel), history=self.call_history, generations=self.generations)
                except BaseException:
                    self.selection = None
                    raise
            try:
                self.agent = self._new_agent(backend.turns)
                backend.warm_up(self.history, self.agent.tool_specs())
            except BaseException:
                backend.close()
                self.agent = self.selection = None
                raise
            self.backend = backend
            return backend.info

    def _new_agent(self, turns) -> Agent:
        """An agent on the local engine or the remote backend's turns (the same loop, tools and approvals)."""
        o = self.options
        if o.tool_names and self.mcp is not None:
            self.mcp.wait()  # an MCP server's tool named in the list must be known to the agent
        agent = Agent(turns, self.toolbox, system=None, params=self._params(), max_steps=o.max_steps,
                      tools=o.tool_names, call_max_tokens=o.call_max_tokens or o.max_tokens, thinking=self.thinking)
        agent.messages = self.history  # the conversation survives a change of pair
        agent.tools_on = self.tools_on
        return agent

    def close(self, timeout: float = -1) -> bool:
        """Free the models; False when a turn or load still held them after `timeout` seconds."""
        if not self._lock.acquire(timeout=timeout):
            return False
        try:
            self._close_backend()
        finally:
            self._lock.release()
        return True

    def _close_backend(self) -> None:
        if self.agent is not None:
            self._messages = self.agent.messages
        if self.backend is not None:
            self.backend.close()
        self.backend = self.agent = None

    def start_mcp(self, notice: Callable[[str], None]) -> None:
        """Start the MCP servers (mcp.json or --mcp-config) in the background; their failures reach `notice` as one
        line. A broken mcp.json raises ConfigError before anything starts."""
        self.mcp = attach_servers(self.toolbox, self.options.mcp_config, on_notice=notice)

    def shutdown(self, timeout: float = -1) -> bool:
        """At the end: stop the MCP servers, free the models and close the conversation store."""
        if self.mcp is not None:
            self.mcp.close()  # stops the servers' processes
        done = self.close(timeout)
        if done and self.conversations is not None:
            self.conversations.close()
        return done

    def apply_settings(self, settings: Settings) -> None:
        """New settings: approval mode now, sampling from the next turn, models and drafters on the next load."""
        self.settings = settings
        self.toolbox.policy.mode = settings.approval
        self.toolbox.env_allow = tuple(settings.tools.env_allow_names())
        self._thinking = None  # the saved default wins over an earlier switch (the app's Ctrl+R)
        if self.agent is not None:
            self.agent.params = self._params()
            self.agent.thinking = self.thinking

    # -- a turn -----------------------------------------------------------------------------------------------------
    def run(self, text: str, *, tool_choice: str | dict | None = None, cancel: threading.Event | None = None,
            on_event: EventHandler | None = None) -> AgentResult:
        """Answer one user message through the agent loop, recorded as it happens. `tool_choice` applies to the first
        step (None: the session's). Raises what Agent.run raises."""
        with self._lock:
            if self.agent is None:
                raise LocalspecError("no model is loaded")
            if self.mcp is not None:
                self.mcp.wait()  # servers still starting: their tools join this turn
            recorder = self.recorder
            handler = recorder.wrap(on_event) if recorder is not None else on_event
            return self.agent.run(text, tool_choice=self.options.tool_choice if tool_choice is None else tool_choice,
                                  cancel=cancel, on_event=handler)

    def _params(self) -> GenParams:
        """The generation parameters of the next turn: the resolved config (flags, then the settings as they are
        now), with this conversation's own temperature and token limit on top."""
        if self.selection is not None:
            params = self.config().params
        else:  # a remote server, or no pair yet: the same flags and settings, without model files
            params = resolve_params(self.options.flags, self.settings, max_tokens=self.options.max_tokens)[0]
        sampling = params.sampling if self.temperature is None else replace(params.sampling,
                                                                            temperature=self.temperature)
        return replace(params, max_tokens=self.max_tokens, sampling=sampling)

    # -- tools on or off for this conversation ------------------------------------------------------------------------
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
        if self.agent is not None:
            self.agent.tools_on = on

    def tool_names(self) -> list[str]:
        """The tools the model can be offered now (built-in and MCP servers', without those the policy refuses)."""
        return [s["function"]["name"] for s in self.toolbox.specs(available_only=True)]

    # -- reasoning models -------------------------------------------------------------------------------------------
    _thinking: bool | None = None  # None: the flags, else config.toml's reasoning.thinking

    @property
    def thinking(self) -> bool:
        """Whether reasoning models think before answering (Qwen3's enable_thinking; /no_think otherwise)."""
        if self._thinking is not None:
            return self._thinking
        flag = self.options.flags.thinking  # --thinking / --no-thinking
        return self.settings.reasoning.thinking if flag is None else flag

    @thinking.setter
    def thinking(self, on: bool) -> None:
        self._thinking = on
        if self.agent is not None:
            self.agent.thinking = on

    # -- this conversation's own settings -------------------------------------------------------------------------
    temperature: float | None = None  # None: config.toml's sampling.temperature
    max_tokens_override: int | None = None  # None: the session's --max-tokens (SessionOptions.max_tokens)

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
            if self.agent is not None:
                self.agent.params = self._params()

    # -- the conversation -------------------------------------------------------------------------------------------
    @property
    def history(self) -> list[dict]:
        """The conversation (chat-template messages, system prompt first)."""
        return self.agent.messages if self.agent is not None else self._messages

    @property
    def conversation_id(self) -> str | None:
        """The saved conversation this session records into (None until its first message is saved)."""
        return self.recorder.id if self.recorder is not None else None

    def reset(self) -> None:
        """A new conversation: the next message starts a new saved one, from the defaults."""
        with self._lock:
            if self.agent is not None:
                self.agent.reset()
            self._messages = self._system()
            self.recorder = self._new_recorder()
            self.temperature = self.max_tokens_override = None
            self.tools_on = self.default_tools_on()
            if self.agent is not None:
                self.agent.params = self._params()

    def resume(self, conv: Conversation, *, record: bool) -> None:
        """Start from a saved conversation (--resume, --continue): carried on, and its pair preferred at the first
        load; `record`: new messages are saved into it."""
        self._resumed = conv
        self.continue_conversation(conv, record=record)

    def open_conversation(self, ref: str) -> Conversation:
        """Continue a saved conversation, recording into it."""
        if self.conversations is None:
            raise ConversationError("conversations are not being saved in this session")
        conv = self.conversations.get(ref)
        self.continue_conversation(conv, record=True)
        return conv

    def continue_conversation(self, conv: Conversation, *, record: bool = False) -> None:
        """Carry on with `conv`: its messages become the history (its system prompt, unless the session was given
        one), with its own temperature, token limit and tools switch; `record`: new messages are saved into it."""
        with self._lock:
            history = conv.history()
            if self.options.system_prompt is not None:
                history = self._system() + [m for m in history if m.get("role") != "system"]
            if self.agent is not None:
                self.agent.messages = history
            self._messages = history
            if record:
                self.recorder = self._new_recorder(conv.id)
            temperature, limit = conv.params.get("temperature_override"), conv.params.get("max_tokens_override")
            self.temperature = float(temperature) if isinstance(temperature, (int, float)) else None
            self.max_tokens_override = limit if isinstance(limit, int) and limit > 0 else None
            tools = conv.params.get("tools")
            self.tools_on = tools if isinstance(tools, bool) else self.default_tools_on()
            if self.agent is not None:
                self.agent.params = self._params()

    def delete_conversation(self, cid: str) -> None:
        """Delete a saved conversation; deleting the open one starts a new conversation."""
        if self.conversations is not None:
            self.conversations.delete(cid)
        if cid == self.conversation_id:
            self.reset()

    def _new_recorder(self, cid: str | None = None) -> ConversationRecorder | None:
        if self.conversations is None:
            return None
        return ConversationRecorder(self.conversations, cid, meta=self.conversation_meta)

    def conversation_meta(self) -> dict:
        """What a saved conversation runs with (refreshed with each user message), the same from every front end:
        which pair or server (agent/backend.py: Backend.meta), the workspace, the system prompt, the settings."""
        backend = self.backend.meta() if self.backend is not None else NOTHING_LOADED
        system = self.system_prompt or None
        params = {**backend["params"], "approval": self.toolbox.policy.mode, "tool_choice": self.options.tool_choice,
                  "temperature_override": self.temperature, "max_tokens_override": self.max_tokens_override,
                  "tools": self.tools_on, "max_steps": self.options.max_steps, **self.extra_meta}
        if self.agent is not None:
            params.update(asdict(self.agent.params))  # max_tokens, sampling, draft_max, ...
        return {"pair": backend["pair"], "workspace": str(self.options.workspace), "system": system,
                "params": params}

    def _system(self) -> list[dict]:
        system = DEFAULT_SYSTEM if self.options.system_prompt is None else self.options.system_prompt
        return [{"role": "system", "content": system}] if system else []

    # -- editing the conversation (regenerate, edit and resend, delete): conversations/editing.py ----------------
    def user_positions(self) -> list[int]:
        """Where the user's messages are in the history."""
        return editing.user_positions(self.history)

    def exchange(self, k: int) -> tuple[int, int]:
        """The history span of the k-th exchange (0-based; negative from the end)."""
        return editing.exchange(self.history, k)

    def take_back(self, k: int) -> str:
        """Remove the k-th exchange and everything after it; returns its user message's text (regenerate sends it
        again, edit sends it changed)."""
        with self._lock:
            text, error = editing.take_back(self.history, k, self._saved_copy())
            self._store_failed(error)
            return text

    def delete_exchange(self, k: int) -> int:
        """Delete the k-th exchange (its user message and the reply to it); returns how many messages went."""
        with self._lock:
            gone, error = editing.delete_exchange(self.history, k, self._saved_copy())
            self._store_failed(error)
            return gone

    def _saved_copy(self) -> editing.SavedCopy | None:
        recorder = self.recorder
        if recorder is None or recorder.id is None or recorder.error is not None:
            return None
        return editing.SavedCopy(recorder.store, recorder.id)

    def _store_failed(self, error: str | None) -> None:
        """The saved copy could not follow an edit: recording stops, as it does for any store error."""
        if error is not None and self.recorder is not None:
            self.recorder.error = error
