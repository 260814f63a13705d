"""No two modules of the package import each other, directly or around a longer circle.

The graph counts every import a reader must follow: at the top of a module, inside a
function, and under `if TYPE_CHECKING:`, absolute and relative. `from pkg import name` is an
edge to the submodule `pkg.name` when there is one, else to `pkg`'s `__init__` (the package's
face), where the name is defined or re-exported. A module of a package that imports a name
through its own package's face counts as importing that `__init__`: when the face imports the
module back, the two are a circle like any other (inside a package, import the sibling that
defines the name). A module's import of itself is no edge. Importing `a.b.c` runs `a` and `a.b`
first, but those implied imports of parent packages are not edges: they would make every face
that imports its own submodules a circle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Set
from dataclasses import dataclass
from pathlib import Path

import mssql_cdc

PACKAGE = Path(mssql_cdc.__file__).parent
ROOT = "mssql_cdc"


@dataclass(frozen=True)
class Module:
    """One module's text, and whether it is a package's `__init__`."""

    source: str
    is_package: bool = False


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _absolute(name: str, node: ast.ImportFrom, module: Module) -> str:
    """The absolute module a `from ... import` statement in `name` reads from."""
    if not node.level:
        return node.module or ""
    package = name if module.is_package else name.rpartition(".")[0]
    base = package.split(".")
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imports_of(name: str, module: Module, known: set[str]) -> Iterator[str]:
    """The library modules `name` imports, anywhere in its text, each as a node of the graph."""
    for node in ast.walk(ast.parse(module.source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in known:
                    yield alias.name
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(name, node, module)
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                if sub in known:
                    yield sub
                elif source in known:
                    yield source


def import_graph(
    modules: Mapping[str, Module], extra: Set[str] = frozenset()
) -> dict[str, set[str]]:
    """Each module's imports of the others; `extra` names modules with no text (`_native`)."""
    known = set(modules) | set(extra)
    return {
        name: {target for target in imports_of(name, module, known) if target != name}
        for name, module in modules.items()
    }


def _components(graph: Mapping[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph.get(target, ())))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(component)
    return found


def _shortest_circle(graph: Mapping[str, set[str]], start: str, within: set[str]) -> list[str]:
    """The shortest path from `start` back to itself inside one component."""
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for target in sorted(graph.get(node, ()) & within):
                if target == start:
                    return [*paths[node], start]
                if target not in paths:
                    paths[target] = [*paths[node], target]
                    following.append(target)
        frontier = following
    raise AssertionError(f"{start} is in no circle")  # a component always closes


def circles(graph: Mapping[str, set[str]]) -> dict[frozenset[str], list[list[str]]]:
    """Each group of modules joined by circles, with the shortest circle through each member
    (the same circle found from two members is named once)."""
    named: dict[frozenset[str], list[list[str]]] = {}
    for component in _components(graph):
        seen: set[tuple[str, ...]] = set()
        for member in sorted(component):
            circle = _shortest_circle(graph, member, component)
            body = circle[:-1]
            turn = body.index(min(body))
            key = tuple(body[turn:] + body[:turn])
            if key not in seen:
                seen.add(key)
                named.setdefault(frozenset(component), []).append([*key, key[0]])
    return named


def library() -> tuple[dict[str, Module], set[str]]:
    """The package's modules by name, and the names of its compiled ones (stubs only)."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        is_package = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if is_package else parts)
        modules[name] = Module(path.read_text(), is_package)
    stubs = {
        ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        for path in PACKAGE.rglob("*.pyi")
    }
    return modules, stubs - set(modules)


def _report(found: Mapping[frozenset[str], list[list[str]]]) -> list[str]:
    return [" -> ".join(circle) for group in found.values() for circle in group]


def test_no_modules_import_each_other() -> None:
    modules, compiled = library()
    found = circles(import_graph(modules, compiled))
    assert _report(found) == []


def test_the_checker_names_a_circle_of_two_modules() -> None:
    graph = import_graph(
        {
            "p.a": Module("from p.b import run\n"),
            "p.b": Module("def run():\n    from p import a\n"),
            "p": Module("", is_package=True),
        }
    )
    assert _report(circles(graph)) == ["p.a -> p.b -> p.a"]


def test_the_checker_follows_relative_and_type_checking_imports() -> None:
    typed = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .c import C\n"
    graph = import_graph(
        {
            "p.a": Module("from . import b\n"),
            "p.b": Module(typed),
            "p.c": Module("from ..p.a import x\n"),
        }
    )
    assert _report(circles(graph)) == ["p.a -> p.b -> p.c -> p.a"]


def test_a_name_taken_through_its_own_package_face_is_an_edge_to_the_face() -> None:
    graph = import_graph(
        {
            "p": Module("from p.a import run\n", is_package=True),
            "p.a": Module("from p import helper\n"),
            "p.b": Module("from p import a\n"),  # a submodule: no edge to the face
        }
    )
    assert graph == {"p": {"p.a"}, "p.a": {"p"}, "p.b": {"p.a"}}
    assert _report(circles(graph)) == ["p -> p.a -> p"]


def test_a_chain_without_a_circle_passes() -> None:
    graph = import_graph(
        {
            "p.a": Module("import p.b\n"),
            "p.b": Module("from p.c import x\nimport p.b\n"),
            "p.c": Module("import os\n"),
        }
    )
    assert circles(graph) == {}
