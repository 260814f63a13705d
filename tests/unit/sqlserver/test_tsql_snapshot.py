"""Snapshot T-SQL: key ranges read every row exactly once, NULLs first, values as parameters.

The range predicate is checked by running the generated text in SQLite (which reads bracket
quotes, CAST, UNION ALL and sorts NULL first like SQL Server) against a plain-Python oracle.
"""

from __future__ import annotations

import itertools
import sqlite3
from typing import Any

import pytest
import sqlglot
from hypothesis import given, settings
from hypothesis import strategies as st

from mssql_cdc.errors import ConfigError
from mssql_cdc.sqlserver import ReadColumn, TsqlSnapshotReader, integer_bounds
from mssql_cdc.sqlserver.metadata import TableColumn
from mssql_cdc.sqlserver.tsql.drivers import Session
from mssql_cdc.sqlserver.tsql.snapshot import (
    first_key_from,
    key_tiles,
    key_type,
    table_rows,
)
from tests.unit.support.fake_dbapi import FakeConnection

K1 = TableColumn("a", 1, "int", False, None, 4, 10, 0)
K2 = TableColumn("b", 2, "int", False, None, 4, 10, 0)
VALUE = ReadColumn("v", "INT", "int")


def run_in_sqlite(rows: list[tuple[Any, Any, int]], lo: Any, hi: Any) -> list[int]:
    db = sqlite3.connect(":memory:")
    db.execute("ATTACH ':memory:' AS dbo")
    db.execute("CREATE TABLE dbo.t ([a] int, [b] int, [v] int)")
    db.executemany("INSERT INTO dbo.t VALUES (?, ?, ?)", rows)
    statement = table_rows("dbo", "t", [VALUE], [K1, K2], lo, hi)
    text, params = statement.render("qmark")
    return sorted(v for (v,) in db.execute(text, params or ()))


def key_order(key: tuple[Any, ...]) -> tuple[tuple[int, int], ...]:
    """SQL Server's order: NULL before every value."""
    return tuple((0, 0) if part is None else (1, part) for part in key)


def oracle(rows: list[tuple[Any, Any, int]], lo: Any, hi: Any) -> list[int]:
    out = []
    for a, b, v in rows:
        key = key_order((a, b))
        if lo is not None and key < key_order(lo):
            continue
        if hi is not None and key >= key_order(hi):
            continue
        out.append(v)
    return sorted(out)


parts = st.none() | st.integers(min_value=0, max_value=4)
bounds = st.none() | st.tuples(parts, parts)


@settings(derandomize=True, database=None, max_examples=400)
@given(
    keys=st.lists(st.tuples(parts, parts), max_size=25),
    lo=bounds,
    hi=bounds,
)
def test_a_composite_range_reads_exactly_the_rows_between_its_bounds(
    keys: list[tuple[Any, Any]], lo: Any, hi: Any
) -> None:
    rows = [(a, b, i) for i, (a, b) in enumerate(keys)]
    assert run_in_sqlite(rows, lo, hi) == oracle(rows, lo, hi)


@settings(derandomize=True, database=None, max_examples=200)
@given(
    keys=st.lists(st.tuples(parts, parts), max_size=25),
    cuts=st.lists(st.tuples(parts, parts), max_size=4),
)
def test_consecutive_ranges_read_every_row_exactly_once(
    keys: list[tuple[Any, Any]], cuts: list[tuple[Any, Any]]
) -> None:
    rows = [(a, b, i) for i, (a, b) in enumerate(keys)]
    edges = sorted(set(cuts), key=key_order)
    bounds_list: list[Any] = [None, *edges, None]
    seen: list[int] = []
    for lo, hi in itertools.pairwise(bounds_list):
        seen += run_in_sqlite(rows, lo, hi)
    assert sorted(seen) == list(range(len(rows)))


def test_every_snapshot_statement_parses_as_tsql() -> None:
    text_key = TableColumn("name", 2, "nvarchar", False, "Latin1_General_CI_AS", 100, 0, 0)
    statements = [
        first_key_from("dbo", "orders", [K1, text_key], -(2**31)),
        key_tiles("dbo", "orders", [K1, text_key], 4),
        table_rows("dbo", "orders", [VALUE], [K1, text_key], (1, "x"), (5, None)),
        table_rows("dbo", "orders", [VALUE], [K1], None, None),
    ]
    for statement in statements:
        parsed = sqlglot.parse(statement.text, read="tsql", error_level=sqlglot.ErrorLevel.RAISE)
        assert len(parsed) == 1
        assert statement.text.count("?") == len(statement.params)


def test_character_bounds_carry_the_column_collation_and_binary_bounds_use_style_1() -> None:
    text_key = TableColumn("name", 2, "nvarchar", False, "Latin1_General_CI_AS", 100, 0, 0)
    statement = table_rows("dbo", "t", [VALUE], [text_key], "m", None)
    assert "t.[name] > CAST(? AS nvarchar(50)) COLLATE Latin1_General_CI_AS" in statement.text
    assert statement.params == ("m", "m")
    binary_key = TableColumn("h", 1, "varbinary", False, None, 16, 0, 0)
    assert (
        "CONVERT(varbinary(16), ?, 1)" in table_rows("s", "t", [], [binary_key], "0x0A", None).text
    )
    bad = TableColumn("name", 2, "nvarchar", False, "x; DROP TABLE t", 100, 0, 0)
    with pytest.raises(ConfigError, match="not a plain collation name"):
        table_rows("dbo", "t", [VALUE], [bad], "m", None)


def test_key_tiles_return_lossless_text_of_each_key_type() -> None:
    keys = [
        TableColumn("d", 1, "datetime", False, None, 8, 23, 3),
        TableColumn("f", 2, "float", False, None, 8, 53, 0),
        TableColumn("m", 3, "money", False, None, 8, 19, 4),
        TableColumn("h", 4, "binary", False, None, 8, 0, 0),
    ]
    text = key_tiles("dbo", "t", keys, 3).text
    assert "CONVERT(nvarchar(64), y.[d], 126) AS [k0]" in text
    assert "CONVERT(varchar(32), y.[f], 3) AS [k1]" in text
    assert "CONVERT(varchar(32), y.[m], 2) AS [k2]" in text
    assert "CONVERT(varchar(max), y.[h], 1) AS [k3]" in text
    assert "NTILE(3) OVER (ORDER BY [d], [f], [m], [h])" in text
    assert "WHERE y.p = 1 AND y.t > 1 ORDER BY y.t;" in text


@pytest.mark.parametrize(
    ("column", "expected"),
    [
        (TableColumn("k", 1, "int", False, None, 4, 10, 0), "int"),
        (TableColumn("k", 1, "decimal", False, None, 9, 12, 2), "decimal(12,2)"),
        (TableColumn("k", 1, "datetime2", False, None, 8, 27, 7), "datetime2(7)"),
        (TableColumn("k", 1, "nvarchar", False, "X", 200, 0, 0), "nvarchar(100)"),
        (TableColumn("k", 1, "varchar", False, "X", 30, 0, 0), "varchar(30)"),
        (TableColumn("k", 1, "nvarchar", False, "X", -1, 0, 0), None),
        (TableColumn("k", 1, "sql_variant", False, None, 8016, 0, 0), None),
        (TableColumn("k", 1, "xml", False, None, -1, 0, 0), None),
        (TableColumn("k", 1, "geography", False, None, -1, 0, 0), None),
    ],
)
def test_bounds_are_cast_only_to_types_from_the_fixed_list(
    column: TableColumn, expected: str | None
) -> None:
    assert key_type(column) == expected


@pytest.mark.parametrize(
    ("low", "high", "n", "expected"),
    [
        (0, 9, 4, [2, 5, 7]),  # the spec's example: int keys 0..9, n = 4
        (0, 9, 1, []),
        (5, 5, 4, []),  # one key: duplicates dropped
        (0, 2, 8, [1, 2]),
        (-(2**63), 2**63 - 1, 2, [0]),
    ],
)
def test_integer_bounds_follow_the_spec_formula(
    low: int, high: int, n: int, expected: list[int]
) -> None:
    assert integer_bounds(low, high, n) == expected


def seek_answer(keys: list[int]) -> Any:
    """A server's answer to a one-row seek over `keys`: the smallest key at or above the
    parameter, as text, or no row."""

    def answer(params: Any) -> tuple[list[str], list[tuple[str]]]:
        found = [k for k in keys if k >= int(params[0])]
        return ["k0"], [(str(min(found)),)] if found else []

    return answer


def snapshot_session(answers: dict[str, Any]) -> tuple[TsqlSnapshotReader, FakeConnection]:
    conn = FakeConnection(answers)
    session = Session(conn, "qmark", arrow=False)  # type: ignore[arg-type]
    return TsqlSnapshotReader(session, isolation="snapshot", lock_timeout_ms=500), conn


COLUMNS_ANSWER = (
    [
        "name",
        "column_id",
        "base_type",
        "max_length",
        "precision",
        "scale",
        "is_computed",
        "collation_name",
    ],
    [("id", 1, "int", 4, 10, 0, False, None), ("v", 2, "int", 4, 10, 0, False, None)],
)


def test_every_source_read_sets_isolation_and_lock_timeout_first() -> None:
    reader, conn = snapshot_session(
        {
            "FROM sys.columns": COLUMNS_ANSWER,
            "SET TRANSACTION": ([], []),
            "SET LOCK_TIMEOUT": ([], []),
            "SELECT TOP (1)": seek_answer(list(range(10))),
            "FROM [dbo].[t] AS t": (["v"], [(1,), (2,)]),
        }
    )
    assert reader.key_extent("dbo", "t", "id") == (0, 9)
    batches = list(
        reader.read_table("dbo", "t", columns=[VALUE], keys=["id"], lo=2, hi=5, batch_rows=10)
    )
    assert sum(b.num_rows for b in batches) == 2
    texts = [text for text, _ in conn.executed if not text.startswith("SELECT c.name")]
    reads = [i for i, text in enumerate(texts) if text.startswith("SELECT")]
    assert len(reads) > 2  # the extent's seeks, then the rows
    for i in reads:
        assert texts[i - 2 : i] == [
            "SET TRANSACTION ISOLATION LEVEL SNAPSHOT;",
            "SET LOCK_TIMEOUT 500;",
        ]
    assert all("NOLOCK" not in text for text, _ in conn.executed)


def test_an_empty_table_has_no_extent_and_an_unknown_key_is_named() -> None:
    reader, _ = snapshot_session(
        {
            "FROM sys.columns": COLUMNS_ANSWER,
            "SET ": ([], []),
            "SELECT TOP (1)": (["k0"], []),
        }
    )
    assert reader.key_extent("dbo", "t", "id") is None
    with pytest.raises(ConfigError, match="snapshot key column 'nope' is not a column"):
        reader.key_extent("dbo", "t", "nope")


def test_snapshot_isolation_refused_by_the_database_says_how_to_allow_it() -> None:
    class Refused(Exception):
        def __init__(self) -> None:
            super().__init__("x")
            self.ddbc_error = "[SQL Server]Snapshot isolation transaction failed. (3952)"

    reader, _ = snapshot_session(
        {"FROM sys.columns": COLUMNS_ANSWER, "SET ": ([], []), "SELECT TOP (1)": Refused()}
    )
    with pytest.raises(ConfigError, match="SET ALLOW_SNAPSHOT_ISOLATION ON"):
        reader.key_extent("dbo", "t", "id")


def test_key_tiles_come_back_as_text_scalars_or_tuples() -> None:
    reader, _ = snapshot_session(
        {
            "FROM sys.columns": COLUMNS_ANSWER,
            "SET ": ([], []),
            "NTILE(3)": (["tile", "k0", "k1"], [(2, "3", None), (3, "6", "1")]),
        }
    )
    assert reader.key_tiles("dbo", "t", ["id", "v"], 3) == [("3", None), ("6", "1")]


def test_a_missing_table_is_a_config_error() -> None:
    reader, _ = snapshot_session({"FROM sys.columns": (COLUMNS_ANSWER[0], [])})
    with pytest.raises(ConfigError, match=r"table \[dbo\]\.\[gone\] does not exist"):
        reader.table_columns("dbo", "gone")
