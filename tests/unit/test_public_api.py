"""The public API is what docs/architecture.md says it is: import paths and names users rely on."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

import mssql_cdc

ARCHITECTURE = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"


def documented_api() -> dict[str, list[str]]:
    """The table of docs/architecture.md's 'The public API' section: import path -> names."""
    section = ARCHITECTURE.read_text().split("## The public API", 1)[1].split("\n## ", 1)[0]
    table: dict[str, list[str]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[0].startswith("`mssql_cdc"):
            table[cells[0].strip("`")] = re.findall(r"`([^`]+)`", cells[1])
    return table


def test_the_documentation_lists_the_public_import_paths() -> None:
    assert set(documented_api()) == {
        "mssql_cdc",
        "mssql_cdc.errors",
        "mssql_cdc.finalization",
        "mssql_cdc.emulator",
        "mssql_cdc.spark",
        "mssql_cdc.testing",
        "mssql_cdc.types",
        "mssql_cdc.testing.failpoints",
    }


def test_the_package_exports_exactly_the_documented_names() -> None:
    assert sorted(mssql_cdc.__all__) == sorted(documented_api()["mssql_cdc"])


def test_every_documented_name_imports_from_its_documented_path() -> None:
    missing = []
    for path, names in documented_api().items():
        module = importlib.import_module(path)
        missing += [f"{path}.{name}" for name in names if not hasattr(module, name)]
    assert missing == []


def test_every_public_name_of_the_package_root_resolves() -> None:
    unresolved = [name for name in mssql_cdc.__all__ if getattr(mssql_cdc, name, None) is None]
    assert unresolved == []
    assert callable(mssql_cdc.stream)  # the function, not a module of the same name


@pytest.mark.parametrize("value", [None, "x", 3, ValueError])
def test_is_data_loss_of_what_is_no_exception_is_false(value: object) -> None:
    assert mssql_cdc.is_data_loss(value) is False  # type: ignore[arg-type]


@pytest.mark.parametrize("spark", [None, "spark", object()])
def test_register_refuses_what_is_no_spark_session_naming_spark(spark: object) -> None:
    with pytest.raises(mssql_cdc.ConfigError, match="register: spark must be a SparkSession"):
        mssql_cdc.register(spark)


def test_quoted_cuts_a_long_value_and_says_how_long_it_was() -> None:
    from mssql_cdc.errors import quoted

    assert quoted("dbo_orders") == "'dbo_orders'"
    assert quoted("x" * 5000) == f"{'x' * 80!r}... (5,000 characters)"
