"""`localspec run PROMPT --tools`: the agent loop, headless (streamed text, or one JSON object with --json).

--approve decides what happens when a write or shell call needs approval:
  ask   (default) ask on the terminal: y = allow once, a = allow always, n = deny once, d = deny always;
        without a terminal on stdin no such call runs (the model is told nobody was asked).
  auto  run everything without asking (Policy mode "auto", an explicit opt-in).
  never deny every call that needs approval, without asking (reads still run).
Denied calls go back to the model as failed tool results, so it can answer anyway.
"""

from __future__ import annotations

import sys
from pathlib import Path

from localspec.commands.shared_flags import flags_from_args, open_from_args
from localspec.commands.tools import add_mcp_arg, start_mcp
from localspec.conversations import find_saved
from localspec.errors import ConfigError
from localspec.terminal import display_text, safe_json, safe_text
from localspec.tools.safety.display import arguments_line

APPROVE_MODES = ("ask", "auto", "never")


def add_agent_args(p) -> None:
    g = p.add_argument_group("agent (with --tools)")
    g.add_argument("--tools", action="store_true", help="run as an agent that can use local tools")
    g.add_argument("--workspace", metavar="DIR", default=None,
                   help="folder the tools may touch (default: the current directory)")
    g.add_argument("--approve", choices=APPROVE_MODES, default="ask",
                   help="writes and shell commands: ask on the terminal (default), auto = allow all, never = deny all")
    g.add_argument("--read-only", action="store_true", help="refuse writes and shell commands outright")
    g.add_argument("--max-steps", type=int, default=8, metavar="N", help="most model turns in the run (default 8)")
    g.add_argument("--tool-choice", default="auto", metavar="CHOICE",
                   help="first turn: auto (default), required, none, or a tool name")
    g.add_argument("--tool-names", default=None, metavar="LIST",
                   help="comma-separated tools to offer (default: all)")
    g.add_argument("--call-max-tokens", type=int, default=1024, metavar="N", help="most tokens in one tool call (default 1024)")
    add_mcp_arg(g)
    # With or without --tools (a plain run is saved and carried on too: commands/saved_chat.py).
    c = p.add_argument_group("conversation (saved: `localspec sessions`)")
    c.add_argument("--system", default=None, metavar="TEXT",
                   help="system prompt (default: none; with --tools a short agent prompt; carried on: its own)")
    c.add_argument("--no-transcript", action="store_true",
                   help="do not record the run (no saved conversation, no tool calls kept for drafting)")
    saved = c.add_mutually_exclusive_group()
    saved.add_argument("--continue", dest="continue_last", action="store_true",
                       help="carry on with the most recent saved conversation (its messages, system prompt; with "
                            "--tools its workspace)")
    saved.add_argument("--resume", metavar="ID", default=None,
                       help="carry on with a saved conversation (IDs: `localspec sessions`)")


def _policy_and_approver(args):
    from localspec.tools import Policy

    if args.read_only:
        return Policy("read-only"), None
    if args.approve == "auto":
        return Policy("auto"), None
    if args.approve == "never":
        return Policy("ask"), lambda request: False
    return Policy("ask"), terminal_approver()


def terminal_approver(stdin=None, out=None):
    """Ask on the terminal; no terminal on stdin (or end of input): the call does not run (tools.NotAsked)."""
    from localspec.tools.safety.terminal_approval import ask_on_terminal

    def approve(request):
        return ask_on_terminal(request, stdin or sys.stdin, out or sys.stderr)

    return approve


class _Printer:
    """Streams the answer to stdout; tool activity and stats go to stderr."""

    def __init__(self, reasoning: str = "show"):
        from localspec.commands.console import PromptMeter
        from localspec.commands.reasoning_output import ReasoningPrinter

        self.at_line_start = True
        self.thoughts = ReasoningPrinter(reasoning == "show")  # reasoning to stderr, or hidden
        self.meter = PromptMeter()  # "reading prompt: N of M tokens" while a long prompt is read (a terminal only)

    def __call__(self, ev) -> None:
        kind = ev.type
        self.meter(ev)
        if kind == "prompt":
            return
        if kind == "text" and ev.kind == "reasoning":
            self.thoughts.write([("reasoning", ev.text)])
            return
        self.thoughts.end()  # anything else closes the thinking block first
        if kind == "text" and ev.kind == "text":
            sys.stdout.write(display_text(ev.text))  # text from files the model read: no escapes
            sys.stdout.flush()
            self.at_line_start = ev.text.endswith("\n")
        elif kind == "tool_call":
            self._err(f"-> {safe_text(ev.name, 100)} {arguments_line(ev.arguments)}")
        elif kind == "tool_result":
            r = ev.result
            self._err(f"<- {safe_text(ev.name, 100)}: " + (f"ok ({len(r.content)} chars)" if r.ok
                                                          else f"error: {safe_text(r.error or '', 2000)}"))
        elif kind == "notice":
            self._err(f"note: {safe_text(ev.message, 2000)}")
        elif kind == "stats":
            self._err(f"[step {ev.step}: {ev.stats.summary()}]")

    def _err(self, line: str) -> None:
        if not self.at_line_start:
            sys.stdout.write("\n")
            sys.stdout.flush()
            self.at_line_start = True
        print(line, file=sys.stderr, flush=True)


def cmd_agent_run(args, remote=None) -> int:
    """`remote`: a launch.remote.RemoteConfig when the turns run on an OpenAI-compatible server (the tools, the
    approvals and the MCP servers stay here)."""
    from localspec.agent import DEFAULT_SYSTEM, Agent
    from localspec.agent.drafting_memory import StoredGenerations, call_history
    from localspec.settings.config_toml import load_config
    from localspec.tools import Toolbox

    if getattr(args, "raw", False):
        raise ConfigError("--raw cannot be combined with --tools (the agent needs the chat template)")
    if args.max_steps < 1:
        raise ConfigError("--max-steps must be >= 1")
    if args.call_max_tokens < 1:
        raise ConfigError("--call-max-tokens must be >= 1")
    conv = find_saved(args.resume, args.continue_last)  # what to carry on with (None: a new conversation)
    workspace = Path(args.workspace) if args.workspace else Path.cwd()
    if conv is not None and not args.workspace and conv.workspace and Path(conv.workspace).is_dir():
        workspace = Path(conv.workspace)  # its tool calls and results name files there
    if not workspace.is_dir():
        raise ConfigError(f"--workspace {workspace}: not an existing directory")
    names = [n.strip() for n in args.tool_names.split(",") if n.strip()] if args.tool_names else None
    policy, approver = _policy_and_approver(args)
    toolbox = Toolbox(workspace, policy, approver, env_allow=load_config().tools.env_allow_names())
    system = DEFAULT_SYSTEM if args.system is None else (args.system or None)
    if conv is not None and args.system is None:
        system = conv.system
    mcp = start_mcp(args.mcp_config, toolbox)  # MCP servers start while the model loads; stopped at the end
    recorder = None
    run: LocalRun | RemoteRun | None = None
    interrupted = False
    try:  # whatever fails from here on, the servers, the store and the models are closed before returning
        recorder = None if args.no_transcript else _open_recorder(conv.id if conv else None)
        if remote is None:
            # Drafting learns from the stored calls; this run's calls are kept with its conversation.
            history = generations = None
            if recorder is not None:
                history = call_history(recorder.store, lambda: recorder.id)
                generations = StoredGenerations(recorder.store, lambda: recorder.id)
            run = LocalRun(open_from_args(args, history=history, generations=generations))
        else:
            run = RemoteRun.of(args, remote)
        if recorder is not None:
            meta = _meta(args, run, workspace, system)
            recorder.meta = lambda: meta
        assert run is not None
        if mcp is not None:
            mcp.wait()
        agent = Agent(run.turns, toolbox, system=system, params=run.params, max_steps=args.max_steps, tools=names,
                      call_max_tokens=args.call_max_tokens, thinking=run.thinking)
        if conv is not None:
            agent.messages += [dict(m) for m in conv.messages or []]
        on_event = None if args.json else _Printer(getattr(args, "reasoning", "show"))
        try:
            result = agent.run(args.prompt, tool_choice=args.tool_choice,
                               on_event=recorder.wrap(on_event) if recorder else on_event)
        except KeyboardInterrupt:
            if agent.last_result is None:
                raise
            result, interrupted = agent.last_result, True
    finally:
        if mcp is not None:
            mcp.close()
        if recorder is not None:
            recorder.close()
        if run is not None:
            run.close()
    if recorder is not None and recorder.error:
        print(f"warning: the conversation was not saved completely: {safe_text(recorder.error, 500)}",
              file=sys.stderr)

    if args.json:
        assert run is not None  # opened, or the exception went up
        print(safe_json(result.to_dict(**run.info(), conversation=recorder.id if recorder else None)))
    else:
        from localspec.commands.console import end_reply

        end_reply()
        note = f"; {safe_text(result.error, 500)}" if result.error else ""
        saved = f"; saved as {recorder.id}" if recorder and recorder.id else ""
        print(f"[{result.steps} step(s), {len(result.tool_calls)} tool call(s), finish: {result.finish_reason}{note}"
              f"{saved}]", file=sys.stderr)
    if interrupted:
        print("interrupted", file=sys.stderr)
        return 130
    return 1 if result.finish_reason == "context" else 0


def _open_recorder(conversation_id: str | None):
    """Save the run as a conversation (`localspec sessions`); a store that cannot be opened is a warning."""
    from localspec.agent.record import open_recorder

    recorder, why = open_recorder(conversation_id)
    if why:
        print(f"warning: the conversation will not be saved: {safe_text(why, 500)}", file=sys.stderr)
    return recorder


def _meta(args, run, workspace: Path, system: str | None) -> dict:
    """What the saved conversation runs with."""
    model = run.meta()
    return {"pair": model["pair"], "workspace": str(workspace.resolve()), "system": system,
            "params": {**model["params"], "temperature": run.params.sampling.temperature,
                       "max_tokens": run.params.max_tokens, "max_steps": args.max_steps,
                       "tool_choice": args.tool_choice, "approve": "read-only" if args.read_only else args.approve}}


class LocalRun:
    """The agent's turns on the local pair."""

    def __init__(self, opened):
        self.opened, self.config, self.pair = opened, opened.config, opened.pair
        self.turns, self.params, self.thinking = opened.engine, opened.config.params, opened.config.thinking

    def info(self) -> dict:
        """What `--json` says ran the turns."""
        pair = self.pair
        return {"target": str(pair.target.path), "draft": str(pair.draft.path) if pair.draft else None}

    def meta(self) -> dict:
        """The model part of the saved conversation's settings."""
        sel = self.config.selection
        return {"pair": sel.pair or sel.target.name,
                "params": {"pair_name": sel.pair, "target": str(sel.target),
                           "draft": str(sel.draft) if sel.draft else None}}

    def close(self) -> None:
        self.opened.close()


class RemoteRun:
    """The agent's turns on an OpenAI-compatible server."""

    def __init__(self, turns, params, thinking: bool, remote):
        self.turns, self.params, self.thinking, self.remote = turns, params, thinking, remote

    @classmethod
    def of(cls, args, remote) -> "RemoteRun":
        from localspec.launch.run_config import resolve_params
        from localspec.remote.turns import open_turns

        params, thinking = resolve_params(flags_from_args(args))
        return cls(open_turns(remote), params, thinking, remote)

    def info(self) -> dict:
        return {"target": None, "draft": None, "backend": "openai", "base_url": self.remote.base_url,
                "model": self.turns.backend.model}

    def meta(self) -> dict:
        return {"pair": self.turns.label,
                "params": {"backend": "openai", "base_url": self.remote.base_url, "model": self.remote.model}}

    def close(self) -> None:
        """Nothing local to close (the server's connection is per request)."""
