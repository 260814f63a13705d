"""The recovery enums' names agree across C++, `_native.pyi` and `core.recovery_decision`.

The binding converts every recovery enum through one C++ table of names and returns those
tables from `_native.recovery.enum_names()`; the Python Literal types are written twice more,
in the stub and in the module. These tests fail as soon as one of the three spells a name
differently, lists another set, or another order.
"""

from __future__ import annotations

import ast
import typing
from pathlib import Path

import pytest

import mssql_cdc
from mssql_cdc import _native
from mssql_cdc.core import recovery_decision as rd

STUB = Path(mssql_cdc.__file__).with_name("_native.pyi")


def literal_name(key: str) -> str:
    """The Literal alias of an enum_names() key: "reuse_kind" is ReuseKind."""
    return "".join(part.title() for part in key.split("_"))


def stub_literals() -> dict[str, list[str]]:
    """The `Name = Literal[...]` aliases of the stub, read with ast (a .pyi is not imported)."""
    out: dict[str, list[str]] = {}
    for node in ast.parse(STUB.read_text()).body:
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Subscript)):
            continue
        if not (isinstance(node.value.value, ast.Name) and node.value.value.id == "Literal"):
            continue
        args = node.value.slice
        elements = args.elts if isinstance(args, ast.Tuple) else [args]
        [target] = node.targets
        assert isinstance(target, ast.Name)
        out[target.id] = [ast.literal_eval(e) for e in elements]
    return out


NATIVE: dict[str, list[str]] = dict(_native.recovery.enum_names())


def test_the_binding_names_every_enum_that_crosses_it() -> None:
    assert sorted(NATIVE) == sorted(
        ["mode", "action", "reuse_kind", "start_source", "duration_guard", "error_kind", "step"]
    )


@pytest.mark.parametrize("key", sorted(NATIVE))
def test_the_python_literal_lists_the_binding_names_in_order(key: str) -> None:
    literal = getattr(rd, literal_name(key))
    assert list(typing.get_args(literal)) == list(NATIVE[key])


@pytest.mark.parametrize("key", sorted(NATIVE))
def test_the_stub_literal_lists_the_binding_names_in_order(key: str) -> None:
    assert stub_literals()[literal_name(key)] == list(NATIVE[key])


def test_the_stub_spells_each_literal_once_as_a_named_alias() -> None:
    tree = ast.parse(STUB.read_text())
    aliased = {id(node.value) for node in tree.body if isinstance(node, ast.Assign)}
    inline = [
        ast.unparse(node)
        for node in ast.walk(tree)
        if isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and node.value.id == "Literal"
        and id(node) not in aliased
    ]
    assert inline == [], "a Literal written inline can drift from the binding's names"


def test_a_name_the_binding_does_not_know_is_refused_with_the_names_it_knows() -> None:
    with pytest.raises(ValueError, match="snapshot mode 'Full' is not one of full, chunked"):
        empty: _native.ObservationDict = {"max_lsn": None, "instances": []}
        _native.recovery.lock_violation("Full", [], [], empty, "t", "a")  # type: ignore[arg-type]
