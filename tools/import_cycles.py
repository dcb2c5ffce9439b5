"""Print the import cycles among a package's modules (issue 8: none in `supervisor/`).

    python tools/import_cycles.py [PACKAGE_DIR]     (default: legion_tui/supervisor)

Every import counts — at the top, inside a function, under `if TYPE_CHECKING:` — because
a lazy import only hides a cycle from the interpreter, not from a reader: two modules
that each need the other are one concern split in two. A package's `__init__` is not
counted as imported by its submodules (Python runs it first, but it imports nothing back
unless it says so). Exit 1 when there is a cycle.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_names(tree: ast.AST, module: str, is_package: bool) -> Iterable[str]:
    """Every module name an import anywhere in `tree` may refer to (a `from x import y`
    yields both `x` and `x.y`: `y` may be a submodule)."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def import_graph(package_dir: Path) -> dict[str, set[str]]:
    """module → the modules of the same package it imports."""
    files = {module_name(p): p for p in sorted(package_dir.rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        names = imported_names(tree, module, path.name == "__init__.py")
        graph[module] = {name for name in names if name in files and name != module}
    return graph


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def main(argv: list[str]) -> int:
    package_dir = Path(argv[0]) if argv else ROOT / "legion_tui" / "supervisor"
    graph = import_graph(package_dir.resolve())
    found = cycles(graph)
    edges = sum(len(targets) for targets in graph.values())
    print(f"{len(graph)} modules, {edges} imports among them, {len(found)} cycles")
    for component in found:
        print("cycle: " + " <-> ".join(component))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
