"""`localspec run PROMPT --tools`: the agent loop, headless (streamed text, or one JSON object with --json).

--approve decides what happens when a write or shell call needs approval:
  ask   (default) ask on the terminal: y = allow once, a = allow always, n = deny once, d = deny always;
        without a terminal on stdin every such call is denied.
  auto  run everything without asking (Policy mode "auto", an explicit opt-in).
  never deny every call that needs approval, without asking (reads still run).
Denied calls go back to the model as failed tool results, so it can answer anyway.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from localspec.errors import ConfigError

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
    g.add_argument("--call-max-tokens", type=int, default=1024, metavar="N", help="most tokens in one tool call")
    g.add_argument("--system", default=None, metavar="TEXT", help="system prompt (default: a short agent prompt)")
    g.add_argument("--no-transcript", action="store_true", help="do not write the session's JSONL transcript")


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
    """Ask on the terminal; no terminal on stdin (or end of input) means deny."""
    from localspec.tools import Decision

    keys = {"y": Decision.ALLOW_ONCE, "a": Decision.ALLOW_ALWAYS, "n": Decision.DENY_ONCE,
            "d": Decision.DENY_ALWAYS}

    def approve(request):
        src, dst = stdin or sys.stdin, out or sys.stderr
        print(f"\n[approval needed] {request.summary or request.tool} (in {request.cwd})", file=dst)
        if request.danger.level != "low":
            print(f"  danger: {request.danger}", file=dst)
        if request.diff:
            lines = request.diff.splitlines()
            print("\n".join(lines[:60] + ([f"... ({len(lines) - 60} more diff lines)"] if len(lines) > 60 else [])),
                  file=dst)
        if not src.isatty():
            print("  no terminal to ask on: denied (use --approve auto to allow such calls)", file=dst)
            return Decision.DENY_ONCE
        while True:
            dst.write("  allow? [y] once / [a] always / [n] no / [d] never: ")
            dst.flush()
            line = src.readline()
            if not line:
                return Decision.DENY_ONCE
            choice = keys.get(line.strip().lower()[:1])
            if choice is not None:
                return choice

    return approve


class _Printer:
    """Streams the answer to stdout; tool activity and stats go to stderr."""

    def __init__(self):
        self.at_line_start = True

    def __call__(self, ev) -> None:
        kind = ev.type
        if kind == "text" and ev.kind == "text":
            sys.stdout.write(ev.text)
            sys.stdout.flush()
            self.at_line_start = ev.text.endswith("\n")
        elif kind == "tool_call":
            self._err(f"-> {ev.name} {json.dumps(ev.arguments, ensure_ascii=False)}")
        elif kind == "tool_result":
            r = ev.result
            self._err(f"<- {ev.name}: " + (f"ok ({len(r.content)} chars)" if r.ok else f"error: {r.error}"))
        elif kind == "notice":
            self._err(f"note: {ev.message}")
        elif kind == "stats":
            self._err(f"[step {ev.step}: {ev.stats.summary()}]")

    def _err(self, line: str) -> None:
        if not self.at_line_start:
            sys.stdout.write("\n")
            sys.stdout.flush()
            self.at_line_start = True
        print(line, file=sys.stderr, flush=True)


def cmd_agent_run(args) -> int:
    from localspec.agent import DEFAULT_SYSTEM, Agent, Transcript
    from localspec.commands.run import gen_params, load_from_args
    from localspec.commands.run import engine_from_args
    from localspec.tools import Toolbox

    if getattr(args, "raw", False):
        raise ConfigError("--raw cannot be combined with --tools (the agent needs the chat template)")
    if args.max_steps < 1:
        raise ConfigError("--max-steps must be >= 1")
    if args.call_max_tokens < 1:
        raise ConfigError("--call-max-tokens must be >= 1")
    workspace = Path(args.workspace) if args.workspace else Path.cwd()
    if not workspace.is_dir():
        raise ConfigError(f"--workspace {workspace}: not an existing directory")
    names = [n.strip() for n in args.tool_names.split(",") if n.strip()] if args.tool_names else None
    policy, approver = _policy_and_approver(args)
    toolbox = Toolbox(workspace, policy, approver)

    pair = load_from_args(args)
    engine = engine_from_args(args, pair)
    transcript = None if args.no_transcript else Transcript.open()
    interrupted = False
    try:
        agent = Agent(engine, toolbox, system=DEFAULT_SYSTEM if args.system is None else (args.system or None),
                      params=gen_params(args), max_steps=args.max_steps, tools=names,
                      call_max_tokens=args.call_max_tokens, transcript=transcript)
        try:
            result = agent.run(args.prompt, tool_choice=args.tool_choice, on_event=None if args.json else _Printer())
        except KeyboardInterrupt:
            result, interrupted = agent.last_result, True
            if result is None:
                raise
    finally:
        if transcript is not None:
            transcript.close()

    if args.json:
        print(json.dumps({
            "text": result.text, "steps": result.steps,
            "tool_calls": [{"name": c.name, "arguments": c.arguments, "ok": c.result.ok, "content": c.result.content,
                            "error": c.result.error} for c in result.tool_calls],
            "finish_reason": result.finish_reason, "error": result.error, "stats": result.stats.to_dict(),
            "target": str(pair.target.path), "draft": str(pair.draft.path) if pair.draft else None,
            "transcript": result.transcript}, ensure_ascii=False))
    else:
        sys.stdout.write("\n")
        note = f"; {result.error}" if result.error else ""
        print(f"[{result.steps} step(s), {len(result.tool_calls)} tool call(s), finish: {result.finish_reason}{note}]",
              file=sys.stderr)
    if interrupted:
        print("interrupted", file=sys.stderr)
        return 130
    return 1 if result.finish_reason == "context" else 0
