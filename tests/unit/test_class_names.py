"""No class name is defined twice in the package.

Two classes of one name in different modules make a reader check which one a signature means,
and an import of the wrong one still type-checks where their fields agree. Each class gets a
name that says what it holds; a class inside a function or another class counts too.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

import mssql_cdc

PACKAGE = Path(mssql_cdc.__file__).parent


def defined_twice(modules: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    """Each class name defined more than once, with the modules that define it."""
    where: dict[str, list[str]] = defaultdict(list)
    for name, source in modules:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ClassDef):
                where[node.name].append(name)
    return {cls: sorted(found) for cls, found in sorted(where.items()) if len(found) > 1}


def test_no_class_name_is_defined_twice() -> None:
    modules = ((str(path.relative_to(PACKAGE)), path.read_text()) for path in PACKAGE.rglob("*.py"))
    assert defined_twice(modules) == {}


def test_the_checker_names_both_modules() -> None:
    modules = [("a.py", "class Row:\n    pass\n"), ("b.py", "def f():\n    class Row: ...\n")]
    assert defined_twice(modules) == {"Row": ["a.py", "b.py"]}
