"""Toolbox: the six local tools behind one never-raising call(), with policy, approval and specs.

Flow of call(): parse arguments -> validate (pydantic) -> policy (read-only refuses writes/shell)
-> plan (resolve paths, compute diff/danger) -> remembered decision or approver -> run.
Every failure becomes ToolResult(ok=False, error=<one line naming the problem>).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Hashable, Iterable, Protocol

from pydantic import BaseModel, ValidationError

from localspec.tools import args as A
from localspec.tools.files import operations as files
from localspec.tools.files import writes
from localspec.tools.files.confine import Workspace
from localspec.tools.limits import Limits
from localspec.tools.safety.allowance import remember as shell_allowance
from localspec.tools.safety.approvals import ApprovalRequest, Approver, Decision, NotAsked
from localspec.tools.safety.danger import HIGH, LOW, Danger, rate_shell
from localspec.tools.safety.policy import Policy
from localspec.tools.schema import describe_validation_error, parameters_schema
from localspec.tools.shell import execute as shell
from localspec.tools.shell.parse import command_patterns
from localspec.tools.tool_result import ToolError, ToolResult, one_line


@dataclass
class Action:
    """A checked, ready-to-run tool call; what the approver is shown comes from here."""
    run: Callable[[], ToolResult]
    summary: str = ""
    danger: Danger = field(default_factory=lambda: Danger(LOW))
    diff: str | None = None
    patterns: tuple[str, ...] = ()  # what "deny always" remembers
    needs_approval: bool = True  # False when there is nothing to approve (e.g. a write with no change)
    # What "allow always" remembers: allow_key (None: the patterns) and its description in words;
    # always_note says why "always" is not offered (then allow_key is ignored and nothing is remembered).
    allow_key: Hashable | None = None
    always: str | None = None
    always_note: str = ""

    def allowance(self, tool: str) -> tuple[Hashable | None, str | None]:
        """(key, words) for "allow always", or (None, None) when it is not offered."""
        if self.always_note:
            return None, None
        if self.allow_key is not None:
            return self.allow_key, self.always or str(self.allow_key)
        if not self.patterns:
            return None, None
        key = self.patterns[0] if len(self.patterns) == 1 else tuple(self.patterns)
        return key, self.always or f"later {tool} calls on {', '.join(self.patterns)}"


@dataclass(frozen=True)
class ToolDef:
    name: str
    description: str
    args_model: type[BaseModel]
    kind: str  # "read" | "write" | "shell"
    plan: Callable[["Toolbox", Any], Action]
    parameters: dict[str, Any] | None = None  # a JSON Schema given as is (external tools); None: from args_model
    source: str = "builtin"  # "builtin", or where an external tool comes from (e.g. "mcp:SERVER")


class ToolSource(Protocol):
    """Tools from outside the Toolbox (MCP servers): they pass through the same validation, policy and approval.
    Asked on every lookup, so tools may come and go during a session (a server stops, is switched off)."""

    def tool_defs(self, reserved: set[str]) -> list[ToolDef]:
        """The tools now available; names must avoid `reserved` (the built-in names)."""


class Toolbox:
    def __init__(self, workspace: Path | str, policy: Policy | str | None = None,
                 approver: Approver | None = None, *, limits: Limits | None = None,
                 env_allow: Iterable[str] = ()) -> None:
        self.workspace = Workspace(workspace)
        self.policy = Policy(policy) if isinstance(policy, str) else (policy or Policy())
        self.approver = approver
        self.limits = limits or Limits()
        self.env_allow = tuple(env_allow)  # secret-looking variables the user lets run_shell see (config)
        self._tools = {t.name: t for t in _TOOLS}
        self._sources: list[ToolSource] = []

    def add_source(self, source: ToolSource) -> None:
        self._sources.append(source)

    def _all(self) -> dict[str, ToolDef]:
        tools = dict(self._tools)
        for source in self._sources:
            for t in source.tool_defs(set(self._tools)):
                tools.setdefault(t.name, t)
        return tools

    def tool_defs(self) -> list[ToolDef]:
        return list(self._all().values())

    @property
    def root(self) -> Path:
        return self.workspace.root

    def names(self) -> list[str]:
        return list(self._all())

    def kind(self, name: str) -> str | None:
        tool = self._all().get(name)
        return tool.kind if tool else None

    def specs(self, *, available_only: bool = False) -> list[dict[str, Any]]:
        """OpenAI-style tool definitions. available_only drops tools the policy refuses (read-only mode)."""
        return [
            {"type": "function", "function": {
                "name": t.name, "description": t.description,
                "parameters": t.parameters if t.parameters is not None else parameters_schema(t.args_model)}}
            for t in self._all().values()
            if not (available_only and self.policy.refuses(t.kind))
        ]

    def call(self, name: str, arguments: dict[str, Any] | str | None = None) -> ToolResult:
        try:
            result = self._call(name, arguments)
        except ToolError as exc:
            result = ToolResult.failure(f"{name}: {exc}")
        except Exception as exc:  # a bug or an unexpected OS error must not crash the agent loop
            result = ToolResult.failure(f"{name}: internal error ({type(exc).__name__}: {one_line(str(exc))})")
        result.tool = str(name)
        return result

    def check(self, name: str, arguments: dict[str, Any] | str | None = None) -> str | None:
        """What call() decides before it runs anything: None when the call would run now, else why not (as its
        error says). The approver is asked, and its answer remembered, exactly as call() does; nothing runs."""
        try:
            prepared = self._prepare(name, arguments)
        except ToolError as exc:
            return f"{name}: {exc}"
        return prepared.error if isinstance(prepared, ToolResult) else None

    def _call(self, name: str, arguments: dict[str, Any] | str | None) -> ToolResult:
        prepared = self._prepare(name, arguments)
        if isinstance(prepared, ToolResult):
            return prepared
        result = prepared.run()
        if result.error:
            result.error = one_line(f"{name}: {result.error}")
        return result

    def _prepare(self, name: str, arguments: dict[str, Any] | str | None) -> Action | ToolResult:
        """The checked, authorized action for a call, or the failed result that stops it."""
        tools = self._all()
        tool = tools.get(name) if isinstance(name, str) else None
        if tool is None:
            return ToolResult.failure(f"unknown tool {name!r}; available tools: {', '.join(tools)}")
        raw = _parse_arguments(arguments)
        try:
            parsed = tool.args_model.model_validate(raw)
        except ValidationError as exc:
            return ToolResult.failure(f"{name}: invalid arguments: {describe_validation_error(exc)}")
        if self.policy.refuses(tool.kind):
            return ToolResult.failure(f"{name}: refused, the session is in read-only mode "
                                      "(only read_file, list_dir and search_text run)")
        action = tool.plan(self, parsed)
        refusal = self._authorize(tool, parsed.model_dump(), action)
        if refusal:
            return ToolResult.failure(f"{name}: {refusal}")
        return action

    def _authorize(self, tool: ToolDef, arguments: dict[str, Any], action: Action) -> str | None:
        """None when the action may run, else the refusal message."""
        if tool.kind == "read":
            return None
        remembered = self.policy.recall(tool.name, action.patterns)
        if remembered is Decision.DENY_ALWAYS:
            return f"refused, the user chose 'deny always' for {' / '.join(action.patterns)}"
        if not action.needs_approval or not self.policy.needs_approval(tool.kind):
            return None
        allow_key, always = action.allowance(tool.name)
        if action.danger.level == HIGH:  # high-danger calls are asked about every time
            allow_key, always = None, None
        if self.policy.allows(tool.name, allow_key):
            return None
        if self.approver is None:
            return ("refused, this needs the user's approval but no approver is available "
                    "(policy mode 'ask'; use mode 'auto' to run without asking)")
        note = action.always_note or ("it is rated high danger: asked every time" if action.danger.level == HIGH
                                      else "" if always else "there is nothing to remember it by")
        request = ApprovalRequest(tool=tool.name, arguments=arguments, cwd=self.root, danger=action.danger,
                                  summary=action.summary, diff=action.diff, patterns=action.patterns,
                                  always=always, always_note="" if always else note)
        try:
            decision = Decision.coerce(self.approver(request))
        except NotAsked as exc:
            return f"not run: it needs the user's approval and nobody was asked ({one_line(str(exc))})"
        except Exception as exc:
            return f"not run, asking for approval failed ({one_line(str(exc)) or type(exc).__name__})"
        if decision is Decision.DENY_ALWAYS:
            self.policy.remember(tool.name, action.patterns, decision)
        elif decision is Decision.ALLOW_ALWAYS and allow_key is not None:
            self.policy.allow_always(tool.name, allow_key)  # not offered: allowing applies once only
        if not decision.allowed:
            return "denied by the user" + (" (remembered for similar calls)" if decision.remembered else "")
        return None


def _parse_arguments(arguments: dict[str, Any] | str | None) -> dict[str, Any]:
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        return {}
    if isinstance(arguments, (str, bytes)):
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError) as exc:
            raise ToolError(f"arguments are not valid JSON ({exc})") from None
    if not isinstance(arguments, dict):
        raise ToolError(f"arguments must be a JSON object, got {type(arguments).__name__}")
    return arguments


# --- planners: one per tool -------------------------------------------------------------------

def _plan_read_file(tb: Toolbox, a: A.ReadFileArgs) -> Action:
    return Action(lambda: ToolResult.success(
        files.read_file(tb.workspace, tb.limits, a.path, a.start_line, a.end_line)), summary=f"read {a.path}")


def _plan_list_dir(tb: Toolbox, a: A.ListDirArgs) -> Action:
    return Action(lambda: ToolResult.success(files.list_dir(tb.workspace, tb.limits, a.path, a.glob)),
                  summary=f"list {a.path}")


def _plan_search_text(tb: Toolbox, a: A.SearchTextArgs) -> Action:
    return Action(lambda: ToolResult.success(files.search_text(tb.workspace, tb.limits, a.pattern, a.path, a.glob,
                                                               a.max_results)), summary=f"search {a.pattern!r}")


def _write_action(tb: Toolbox, plan: writes.WritePlan) -> Action:
    def run() -> ToolResult:
        if plan.unchanged:
            return ToolResult.success(f"No changes: {plan.target.rel} already has this content", diff="")
        return ToolResult.success(writes.apply_plan(tb.workspace, plan, tb.limits), diff=plan.diff,
                                  path=plan.target.rel)
    return Action(run, summary=plan.summary, danger=plan.danger, diff=plan.diff, patterns=(plan.target.rel,),
                  needs_approval=not plan.unchanged)


def _plan_write_file(tb: Toolbox, a: A.WriteFileArgs) -> Action:
    return _write_action(tb, writes.plan_write(tb.workspace, a.path, a.content, tb.limits))


def _plan_edit_file(tb: Toolbox, a: A.EditFileArgs) -> Action:
    return _write_action(tb, writes.plan_edit(tb.workspace, a.path, a.old, a.new, tb.limits))


def _plan_run_shell(tb: Toolbox, a: A.RunShellArgs) -> Action:
    timeout = min(a.timeout_s or tb.limits.shell_timeout_s, tb.limits.shell_timeout_max_s)
    if "\x00" in a.command:
        raise ToolError("argument 'command' contains a NUL byte")
    size = len(a.command.encode("utf-8", "surrogatepass"))
    if size > tb.limits.shell_command_bytes:  # Linux refuses one argument over 128 KiB (E2BIG) anyway
        raise ToolError(f"the command is {size:,} bytes, over the {tb.limits.shell_command_bytes:,}-byte limit for "
                        "one command line; write it to a script with write_file and run that")

    def run() -> ToolResult:
        try:
            out = shell.run_shell(a.command, tb.root, timeout, tb.limits.shell_output_bytes, env_allow=tb.env_allow,
                                  max_processes=tb.limits.shell_max_processes)
        except OSError as exc:
            raise ToolError(f"could not start /bin/sh: {exc.strerror or exc}") from None
        content = out.output.rstrip("\n") or "(no output)"
        data: dict[str, Any] = {"exit_code": out.exit_code, "timed_out": out.timed_out,
                                "truncated_bytes": out.truncated_bytes}
        if out.survivors:
            data["survivors"] = list(out.survivors)
        if out.truncated_bytes:
            content += (f"\n[output truncated: {out.truncated_bytes} bytes omitted; "
                        f"limit {tb.limits.shell_output_bytes} bytes]")
        notes = shell.process_notes(out)
        if out.too_many:
            return ToolResult.failure(
                f"command stopped: it had {out.too_many} processes running at once (limit "
                f"{tb.limits.shell_max_processes}; a fork bomb?); " + ("all were killed" if not out.survivors else
                f"{len(out.survivors)} process(es) could not be stopped"), content=content + notes, **data)
        if out.timed_out:
            killed = ("it and its child processes were killed" if not out.survivors else
                      f"it was killed, but {len(out.survivors)} process(es) it started could not be stopped")
            return ToolResult.failure(f"command timed out after {timeout:g}s; {killed}",
                                      content=content + f"\n[timed out after {timeout:g}s]" + notes, **data)
        content += f"\n[exit code: {out.exit_code}]" + notes
        return ToolResult.success(content, **data)

    danger = rate_shell(a.command, tb.root)
    kept = shell_allowance(a.command, tb.root)
    return Action(run, summary=f"run: {a.command}", danger=danger, patterns=command_patterns(a.command),
                  allow_key=kept.allowance, always=kept.allowance.describe() if kept.allowance else None,
                  always_note=kept.reason if kept.allowance is None else "")


_TOOLS = (
    ToolDef("read_file", "Read a text file from the workspace. Optionally a line range (1-based, inclusive). "
            "Large files are cut at 256 KiB; binary files are refused.", A.ReadFileArgs, "read", _plan_read_file),
    ToolDef("list_dir", "List a workspace directory: entries with type and size, sorted. Optional glob; \"**\" "
            "matches across directories (skipping .git, caches, node_modules, virtualenvs).",
            A.ListDirArgs, "read", _plan_list_dir),
    ToolDef("search_text", "Search text files for a regular expression; returns file:line: text. Skips binary "
            "and very large files, .git, caches, node_modules and virtualenvs.",
            A.SearchTextArgs, "read", _plan_search_text),
    ToolDef("write_file", "Create or overwrite a file with the given content (atomic). Prefer edit_file for "
            "small changes to existing files.", A.WriteFileArgs, "write", _plan_write_file),
    ToolDef("edit_file", "Replace one exact occurrence of 'old' with 'new' in a file. 'old' must match exactly "
            "once, including whitespace.", A.EditFileArgs, "write", _plan_edit_file),
    ToolDef("run_shell", "Run a shell command (/bin/sh) in the workspace root. Returns combined stdout/stderr "
            "and the exit code. Interactive commands get no input.", A.RunShellArgs, "shell", _plan_run_shell),
)
