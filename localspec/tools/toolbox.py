"""Toolbox: the six local tools behind one never-raising call(), with policy, approval and specs.

Flow of call(): parse arguments -> validate (pydantic) -> policy (read-only refuses writes/shell)
-> plan (resolve paths, compute diff/danger) -> remembered decision or approver -> run.
Every failure becomes ToolResult(ok=False, error=<one line naming the problem>).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel, ValidationError

from . import args as A
from . import files, shell, writes
from .approval import ApprovalRequest, Approver, Decision
from .danger import HIGH, LOW, Danger, rate_shell
from .limits import Limits
from .paths import Workspace
from .policy import Policy
from .result import ToolError, ToolResult, one_line
from .schema import describe_validation_error, parameters_schema
from .shellparse import command_patterns


@dataclass
class Action:
    """A checked, ready-to-run tool call; what the approver is shown comes from here."""
    run: Callable[[], ToolResult]
    summary: str = ""
    danger: Danger = field(default_factory=lambda: Danger(LOW))
    diff: str | None = None
    patterns: tuple[str, ...] = ()
    needs_approval: bool = True  # False when there is nothing to approve (e.g. a write with no change)


@dataclass(frozen=True)
class ToolDef:
    name: str
    description: str
    args_model: type[BaseModel]
    kind: str  # "read" | "write" | "shell"
    plan: Callable[["Toolbox", Any], Action]


class Toolbox:
    def __init__(self, workspace: Path | str, policy: Policy | str | None = None,
                 approver: Approver | None = None, *, limits: Limits | None = None) -> None:
        self.workspace = Workspace(workspace)
        self.policy = Policy(policy) if isinstance(policy, str) else (policy or Policy())
        self.approver = approver
        self.limits = limits or Limits()
        self._tools = {t.name: t for t in _TOOLS}

    @property
    def root(self) -> Path:
        return self.workspace.root

    def names(self) -> list[str]:
        return list(self._tools)

    def kind(self, name: str) -> str | None:
        tool = self._tools.get(name)
        return tool.kind if tool else None

    def specs(self, *, available_only: bool = False) -> list[dict[str, Any]]:
        """OpenAI-style tool definitions. available_only drops tools the policy refuses (read-only mode)."""
        return [
            {"type": "function", "function": {
                "name": t.name, "description": t.description, "parameters": parameters_schema(t.args_model)}}
            for t in self._tools.values()
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

    def _call(self, name: str, arguments: dict[str, Any] | str | None) -> ToolResult:
        tool = self._tools.get(name) if isinstance(name, str) else None
        if tool is None:
            return ToolResult.failure(f"unknown tool {name!r}; available tools: {', '.join(self._tools)}")
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
        result = action.run()
        if result.error:
            result.error = one_line(f"{name}: {result.error}")
        return result

    def _authorize(self, tool: ToolDef, arguments: dict[str, Any], action: Action) -> str | None:
        """None when the action may run, else the refusal message."""
        if tool.kind == "read":
            return None
        remembered = self.policy.recall(tool.name, action.patterns)
        if remembered is Decision.DENY_ALWAYS:
            return f"refused, the user chose 'deny always' for {' / '.join(action.patterns)}"
        if not action.needs_approval or not self.policy.needs_approval(tool.kind):
            return None
        if remembered is Decision.ALLOW_ALWAYS and action.danger.level != HIGH:
            return None  # high-danger calls are asked about even if a similar one was always-allowed
        if self.approver is None:
            return ("refused, this needs the user's approval but no approver is available "
                    "(policy mode 'ask'; use mode 'auto' to run without asking)")
        request = ApprovalRequest(tool=tool.name, arguments=arguments, cwd=self.root, danger=action.danger,
                                  summary=action.summary, diff=action.diff, patterns=action.patterns)
        try:
            decision = Decision.coerce(self.approver(request))
        except Exception as exc:
            return f"not run, asking for approval failed ({one_line(str(exc)) or type(exc).__name__})"
        self.policy.remember(tool.name, action.patterns, decision)
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
    return _write_action(tb, writes.plan_write(tb.workspace, a.path, a.content))


def _plan_edit_file(tb: Toolbox, a: A.EditFileArgs) -> Action:
    return _write_action(tb, writes.plan_edit(tb.workspace, a.path, a.old, a.new))


def _plan_run_shell(tb: Toolbox, a: A.RunShellArgs) -> Action:
    timeout = min(a.timeout_s or tb.limits.shell_timeout_s, tb.limits.shell_timeout_max_s)
    if "\x00" in a.command:
        raise ToolError("argument 'command' contains a NUL byte")

    def run() -> ToolResult:
        try:
            out = shell.run_shell(a.command, tb.root, timeout, tb.limits.shell_output_bytes)
        except OSError as exc:
            raise ToolError(f"could not start /bin/sh: {exc.strerror or exc}") from None
        content = out.output.rstrip("\n") or "(no output)"
        data = {"exit_code": out.exit_code, "timed_out": out.timed_out, "truncated_bytes": out.truncated_bytes}
        if out.truncated_bytes:
            content += (f"\n[output truncated: {out.truncated_bytes} bytes omitted; "
                        f"limit {tb.limits.shell_output_bytes} bytes]")
        if out.timed_out:
            return ToolResult.failure(f"command timed out after {timeout:g}s; it and its child processes were "
                                      "killed", content=content + f"\n[timed out after {timeout:g}s]", **data)
        content += f"\n[exit code: {out.exit_code}]"
        if out.killed_leftovers:
            content += "\n[background processes still running after the command exited were stopped]"
        return ToolResult.success(content, **data)

    return Action(run, summary=f"run: {a.command}", danger=rate_shell(a.command, tb.root),
                  patterns=command_patterns(a.command))


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
