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

from localspec.commands.shared_flags import flags_from_args
from localspec.commands.tools import add_mcp_arg, stderr_notice
from localspec.conversations import find_saved
from localspec.errors import ConfigError
from localspec.commands.reasoning_output import ReasoningPrinter
from localspec.terminal import display_text, safe_json, safe_text
from localspec.tools import Policy
from localspec.tools.safety.display import arguments_line
from localspec.tools.safety.terminal_approval import ask_on_terminal

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
    if args.read_only:
        return Policy("read-only"), None
    if args.approve == "auto":
        return Policy("auto"), None
    if args.approve == "never":
        return Policy("ask"), lambda request: False
    return Policy("ask"), terminal_approver()


def terminal_approver(stdin=None, out=None):
    """Ask on the terminal; no terminal on stdin (or end of input): the call does not run (tools.NotAsked)."""
    def approve(request):
        return ask_on_terminal(request, stdin or sys.stdin, out or sys.stderr)

    return approve


class _Printer:
    """Streams the answer to stdout; tool activity and stats go to stderr."""

    def __init__(self, reasoning: str = "show"):
        # Imported here: console.py loads the turn engine, which `localspec --help` does not need.
        from localspec.commands.console import PromptMeter

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
    """`remote`: a launch.backend_choice.RemoteConfig when the turns run on an OpenAI-compatible server (the tools,
    the approvals and the MCP servers stay here)."""
    # Imported here, not at the top: this module is loaded to build `localspec --help`, the session only to run.
    from localspec.agent.session import AgentSession, SessionOptions

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
    names = tuple(n.strip() for n in args.tool_names.split(",") if n.strip()) if args.tool_names else None
    policy, approver = _policy_and_approver(args)
    options = SessionOptions(flags=flags_from_args(args), workspace=workspace.resolve(), system_prompt=args.system,
                             tool_choice=args.tool_choice, record=not args.no_transcript,
                             resume=conv.id if conv is not None and not args.no_transcript else None,
                             mcp_config=args.mcp_config, tool_names=names, max_steps=args.max_steps,
                             call_max_tokens=args.call_max_tokens)
    session = AgentSession(options, policy=policy, approver=approver)
    interrupted = False
    try:  # whatever fails from here on, the servers, the store and the models are closed before returning
        if session.store_error:
            print(f"warning: the conversation will not be saved: {safe_text(session.store_error, 500)}",
                  file=sys.stderr)
        if conv is not None and session.conversation_id is None:
            session.resume(conv, record=False)  # --no-transcript (or no store): carried on, not saved
        # `run --tools` asks for the tools, whatever a carried-on plain conversation was saved with; under
        # --tool-choice none the model still sees them (as OpenAI's API does) and calls none, so the prompt's
        # system + tools prefix is the one later runs restore
        session.tools_on = True
        session.extra_meta = {"approve": "read-only" if args.read_only else args.approve}
        session.start_mcp(stderr_notice)  # MCP servers start while the model loads; stopped at the end
        info = session.load(remote or session.initial_selection())
        if info.warning:
            print(f"warning: {safe_text(info.warning, 2000)}", file=sys.stderr)  # it names a file: escaped
        on_event = None if args.json else _Printer(getattr(args, "reasoning", "show"))
        try:
            result = session.run(args.prompt, on_event=on_event)
        except KeyboardInterrupt:
            assert session.agent is not None  # loaded above
            if session.agent.last_result is None:
                raise
            result, interrupted = session.agent.last_result, True
        recorder = session.recorder
    finally:
        session.shutdown()
    if recorder is not None and recorder.error:
        print(f"warning: the conversation was not saved completely: {safe_text(recorder.error, 500)}",
              file=sys.stderr)

    if args.json:
        print(safe_json(result.to_dict(**_ran_on(info), conversation=recorder.id if recorder else None)))
    else:
        from localspec.commands.console import end_reply  # loaded by _Printer already, or now (--json: not at all)

        end_reply()
        note = f"; {safe_text(result.error, 500)}" if result.error else ""
        saved = f"; saved as {recorder.id}" if recorder and recorder.id else ""
        print(f"[{result.steps} step(s), {len(result.tool_calls)} tool call(s), finish: {result.finish_reason}{note}"
              f"{saved}]", file=sys.stderr)
    if interrupted:
        print("interrupted", file=sys.stderr)
        return 130
    return 1 if result.finish_reason == "context" else 0


def _ran_on(info) -> dict:
    """What `--json` says ran the turns."""
    if info.remote is not None:
        return {"target": None, "draft": None, "backend": "openai", "base_url": info.remote, "model": info.model}
    return {"target": str(info.target), "draft": str(info.draft) if info.draft else None}
