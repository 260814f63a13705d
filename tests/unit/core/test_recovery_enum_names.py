"""The recovery enums' names agree between C++ and `core.recovery_decision`, which the stub uses.

The binding converts every recovery enum through one C++ table of names and returns those
tables from `_native.recovery.enum_names()`; the Python Literal types are written once more, in
`core.recovery_decision`, and the stub imports them from there. These tests fail as soon as
the two spell a name differently, list another set, or another order.
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


def stub_imports() -> dict[str, str]:
    """The names the stub imports, with the module each comes from (a .pyi is not imported)."""
    return {
        alias.asname or alias.name: node.module or ""
        for node in ast.parse(STUB.read_text()).body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }


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
def test_the_stub_takes_each_literal_from_the_module(key: str) -> None:
    assert stub_imports()[literal_name(key)] == "mssql_cdc.core.recovery_decision"


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
