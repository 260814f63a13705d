"""Chunk-planning T-SQL: bucket counts and keys at a distance, checked by running the text.

Each statement is parsed as T-SQL, transpiled by sqlglot to SQLite and run on a small table;
the oracle is plain Python over the same rows (NULL sorts first, as in SQL Server).
"""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest
import sqlglot
from hypothesis import given, settings
from hypothesis import strategies as st

from mssql_cdc.sqlserver.metadata import TableColumn
from mssql_cdc.sqlserver.tsql.chunks import Buckets, bucket_edges, key_at, key_buckets, row_count
from mssql_cdc.sqlserver.tsql.drivers import Session
from mssql_cdc.sqlserver.tsql.snapshot_backend import TsqlSnapshotReader
from mssql_cdc.sqlserver.tsql.statements import Statement
from tests.unit.support.fake_dbapi import FakeConnection

ID = TableColumn("id", 1, "bigint", False, None, 8, 19, 0)
A = TableColumn("a", 1, "int", False, None, 4, 10, 0)
B = TableColumn("b", 2, "int", False, None, 4, 10, 0)


def run(statement: Statement, create: str, rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    sqlglot.parse_one(statement.text, read="tsql")  # valid T-SQL first
    db = sqlite3.connect(":memory:")
    db.execute("ATTACH ':memory:' AS dbo")
    db.execute(create)
    if rows:
        marks = ", ".join("?" * len(rows[0]))
        db.executemany(f"INSERT INTO dbo.t VALUES ({marks})", rows)
    sqlite_text = sqlglot.transpile(statement.text, read="tsql", write="sqlite")[0]
    return list(db.execute(sqlite_text, statement.params))


@settings(derandomize=True, database=None, max_examples=120)
@given(
    ids=st.lists(st.integers(min_value=-50, max_value=50), unique=True, max_size=30),
    lo=st.integers(min_value=-60, max_value=40),
    span=st.integers(min_value=1, max_value=80),
    n=st.integers(min_value=1, max_value=12),
)
def test_bucket_counts_match_a_python_count_of_the_same_edges(
    ids: list[int], lo: int, span: int, n: int
) -> None:
    buckets = Buckets(lo, lo + span, n)
    edges = bucket_edges(buckets)
    assert len(edges) == n
    assert edges[0][0] == lo
    assert edges[-1][1] == lo + span
    assert sorted({b - a for a, b in edges}, reverse=True)[0] - min(b - a for a, b in edges) <= 1
    got = {
        int(j): count
        for j, count in run(
            key_buckets("dbo", "t", ID, buckets), "CREATE TABLE dbo.t (id int)", [(i,) for i in ids]
        )
    }
    expected = {j: sum(1 for i in ids if a <= i < b) for j, (a, b) in enumerate(edges) if a < b}
    assert {j: got.get(j, 0) for j in expected} == expected
    assert set(got) <= set(expected)


def test_buckets_reach_the_bigint_limits_without_overflow() -> None:
    statement = key_buckets("dbo", "t", ID, Buckets(-(2**63), 2**63, 4))
    assert statement.params[-2:] == (str(-(2**63)), str(2**63 - 1))  # hi is sent inclusive
    assert "CAST(? AS bigint)" in statement.text


def order(key: tuple[Any, ...]) -> tuple[tuple[int, int], ...]:
    return tuple((0, 0) if p is None else (1, p) for p in key)


parts = st.none() | st.integers(min_value=0, max_value=3)


@settings(derandomize=True, database=None, max_examples=150)
@given(
    keys=st.lists(st.tuples(parts, parts), unique=True, max_size=20),
    start=st.none() | st.tuples(parts, parts),
    inclusive=st.booleans(),
    position=st.integers(min_value=0, max_value=6),
)
def test_the_key_at_a_distance_is_the_python_sorted_one(
    keys: list[tuple[Any, Any]], start: Any, inclusive: bool, position: int
) -> None:
    statement = key_at("dbo", "t", [A, B], start, inclusive=inclusive, position=position)
    got = run(statement, "CREATE TABLE dbo.t (a int, b int)", keys)
    after = sorted(
        (
            k
            for k in keys
            if start is None or order(k) > order(start) or (inclusive and order(k) == order(start))
        ),
        key=order,
    )
    if position < len(after):
        expected = tuple(None if p is None else str(p) for p in after[position])
        assert [tuple(None if v is None else str(v) for v in row) for row in got] == [expected]
    else:
        assert got == []


def test_each_piece_reads_at_most_position_plus_one_keys() -> None:
    text = key_at("dbo", "t", [A, B], (1, 2), inclusive=False, position=9).text
    assert text.count("SELECT TOP (10)") == 2  # one per seekable piece: a > 1; a = 1 AND b > 2
    assert text.endswith("WHERE v.r = 10;")


def test_row_count_reads_metadata_for_the_quoted_table() -> None:
    statement = row_count("dbo", "a]b")
    assert statement.params == ("[dbo].[a]]b]",)
    assert len(sqlglot.parse(statement.text, read="tsql")) == 1


@pytest.mark.parametrize("bad", [-1, True, 1.5])
def test_a_position_must_be_a_non_negative_int(bad: object) -> None:
    with pytest.raises(ValueError, match="position must be an int >= 0"):
        key_at("dbo", "t", [A], None, inclusive=True, position=bad)  # type: ignore[arg-type]


def test_only_integer_keys_can_be_bucketed() -> None:
    text_key = TableColumn("name", 1, "nvarchar", False, "X", 20, 0, 0)
    with pytest.raises(ValueError, match="not an integer type"):
        key_buckets("dbo", "t", text_key, Buckets(0, 10, 2))


COLUMNS = (
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
    [("id", 1, "bigint", 8, 19, 0, False, None)],
)


def test_more_buckets_than_keys_leave_zero_width_buckets_at_the_end() -> None:
    assert bucket_edges(Buckets(0, 2, 4)) == [(0, 1), (1, 2), (2, 2), (2, 2)]
    assert bucket_edges(Buckets(0, 10, 4)) == [(0, 3), (3, 6), (6, 8), (8, 10)]


def test_the_backend_fills_buckets_without_rows_with_zero() -> None:
    conn = FakeConnection(
        {
            "FROM sys.columns": COLUMNS,
            "SET ": ([], []),
            "GROUP BY b.j": (["bucket", "row_count"], [(0, 3), (2, 1)]),
            "sys.partitions": (["row_count"], [(42,)]),
            "ROW_NUMBER() OVER (ORDER BY u.[id])": (["k0"], [("17",)]),
        }
    )
    reader = TsqlSnapshotReader(
        Session(conn, "qmark", arrow=False),  # type: ignore[arg-type]
        isolation="readCommitted",
        lock_timeout_ms=None,
    )
    assert reader.key_buckets("dbo", "t", "id", 4, 0, 8) == [
        (0, 2, 3),
        (2, 4, 0),
        (4, 6, 1),
        (6, 8, 0),
    ]
    assert reader.row_count("dbo", "t") == 42
    assert reader.key_at("dbo", "t", ["id"], "5", inclusive=True, position=3) == "17"
