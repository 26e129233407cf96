#!/usr/bin/env python3
"""Check that imports inside localspec/ point one way: no cycles, and no layer importing one above it.

    python scripts/check_imports.py [PACKAGE_DIR]     # default: localspec/ next to this script's folder

Every import counts, including those inside functions (a lazy import is still a dependency: it only hides a cycle
until the day both modules load each other). Imports under `if TYPE_CHECKING:` count too. A package's
`__init__.py` re-exporting its own submodules is not a cycle; a name imported from such a package counts as
imported from the submodule that defines it, so a cycle through a re-export is still found. Imports by name at
run time (importlib) are invisible to it: the one such place is cli.py loading its COMMANDS, which points down.

Exit status 0 when clean, 1 with one line per problem otherwise. tests/test_import_layers.py runs it.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass, field
from pathlib import Path

# The layers (README: UI -> agent -> speculative -> runtime; tools, chat, models below the agent). Each entry: the
# top-level parts of the package a part must not import. Parts not named here (errors, remote, bench, ...) are
# free of rules beyond "no cycles".
ABOVE_AGENT = {"agent", "tui", "commands", "serve", "cli"}
FORBIDDEN = {
    "speculative": {"agent", "turns", "tools", "tui", "commands", "serve", "cli"},
    # One assistant turn on the engine: below the agent, which adds tools around it, and the server and bench.
    "launch": {"agent", "turns", "tools", "tui", "commands", "serve", "cli", "bench"},  # flags -> config -> engine
    "turns": {"agent", "tools", "tui", "commands", "serve", "cli", "bench"},
    "agent": {"tui", "commands", "serve", "cli"},
    "tools": ABOVE_AGENT,
    "chat": ABOVE_AGENT,
    "models": ABOVE_AGENT,
    "conversations": ABOVE_AGENT,  # the saved-conversation store: storage below the agent
    "mcp": ABOVE_AGENT,  # MCP servers' tools: a tool source for the Toolbox, below the agent
    "remote": ABOVE_AGENT | {"launch"},  # an OpenAI-compatible server as a turn provider, below the agent
}
# runtime/ wraps llama.cpp and may lean on nothing of ours but itself and the error types.
ONLY_ALLOWED = {"runtime": {"runtime", "errors"}}
# Third-party packages only one part may import.
EXCLUSIVE = {"textual": "tui", "mcp": "mcp", "mcp_types": "mcp", "httpx2": "mcp"}  # mcp: the SDK, only in mcp/


@dataclass
class Module:
    name: str  # dotted, e.g. localspec.commands.run
    path: Path
    is_package: bool
    tree: ast.Module
    reexports: dict[str, str] = field(default_factory=dict)  # name -> the submodule an __init__ takes it from


def load_modules(root: Path) -> dict[str, Module]:
    package = root.name
    modules = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).with_suffix("")
        parts = [package, *rel.parts]
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        name = ".".join(parts)
        modules[name] = Module(name, path, is_package, ast.parse(path.read_text(encoding="utf-8"), str(path)))
    return modules


def _absolute(mod: Module, node: ast.ImportFrom) -> str:
    """The module an ImportFrom names, with relative levels resolved against the importing module's package."""
    if node.level == 0:
        return node.module or ""
    base = mod.name.split(".") if mod.is_package else mod.name.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _find_reexports(modules: dict[str, Module]) -> None:
    for mod in modules.values():
        if not mod.is_package:
            continue
        for node in mod.tree.body:  # module level only: that is what a re-export is
            if isinstance(node, ast.ImportFrom):
                source = _absolute(mod, node)
                for alias in node.names:
                    sub = f"{source}.{alias.name}"
                    target = sub if sub in modules else source
                    if target.startswith(mod.name + ".") and target in modules:
                        mod.reexports[alias.asname or alias.name] = target


def imports_of(mod: Module, modules: dict[str, Module]) -> tuple[set[str], set[str]]:
    """(modules of this package that `mod` imports, top-level names of external packages it imports)."""
    package = mod.name.split(".")[0]
    internal: set[str] = set()
    external: set[str] = set()

    def add(target: str) -> None:
        if target.split(".")[0] != package:
            external.add(target.split(".")[0])
            return
        while target and target not in modules:  # `import a.b.Name`-style leftovers: the closest real module
            target = target.rpartition(".")[0]
        if target:
            internal.add(target)

    for node in ast.walk(mod.tree):  # the whole tree: function-level imports included
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(mod, node)
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                if sub in modules:
                    add(sub)
                elif source in modules and alias.name in modules[source].reexports:
                    add(modules[source].reexports[alias.name])
                else:
                    add(source)
    internal.discard(mod.name)
    if mod.is_package:  # an __init__ re-exporting (or importing) its own submodules is not a dependency cycle
        internal = {t for t in internal if not t.startswith(mod.name + ".")}
    return internal, external


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _path_within(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """The shortest cycle through the component's first module, to name in the message (a -> b -> a)."""
    members = set(component)
    start = component[0]
    parent: dict[str, str | None] = {start: None}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for child in sorted(graph[node] & members):
            if child == start:
                path = [node]
                while parent[path[-1]] is not None:
                    path.append(parent[path[-1]])
                return path[::-1] + [start]
            if child not in parent:
                parent[child] = node
                queue.append(child)
    return component  # not reached: every module of a component lies on a cycle


def _part(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def check(root: Path) -> list[str]:
    modules = load_modules(root)
    _find_reexports(modules)
    graph: dict[str, set[str]] = {}
    problems: list[str] = []
    for name, mod in modules.items():
        internal, external = imports_of(mod, modules)
        graph[name] = internal
        here = _part(name)
        for target in sorted(internal):
            there = _part(target)
            if there in FORBIDDEN.get(here, ()):
                problems.append(f"layer: {name} imports {target} ({here}/ must not import {there}/)")
            if here in ONLY_ALLOWED and there not in ONLY_ALLOWED[here]:
                problems.append(f"layer: {name} imports {target} ({here}/ may import only "
                                f"{', '.join(sorted(ONLY_ALLOWED[here]))})")
        for pkg in sorted(external):
            owner = EXCLUSIVE.get(pkg)
            if owner is not None and here != owner:
                problems.append(f"layer: {name} imports {pkg} (only {owner}/ may)")
    for component in _cycles(graph):
        problems.append("cycle: " + " -> ".join(_path_within(graph, component))
                        + (f"  (component: {', '.join(component)})" if len(component) > 2 else ""))
    return problems


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    root = Path(argv[0]) if argv else Path(__file__).resolve().parent.parent / "localspec"
    if not (root / "__init__.py").is_file():
        print(f"error: {root} is not a package folder", file=sys.stderr)
        return 2
    problems = check(root)
    for line in problems:
        print(line)
    if not problems:
        print(f"imports ok: {sum(1 for _ in root.rglob('*.py'))} modules, no cycles, layers respected")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
