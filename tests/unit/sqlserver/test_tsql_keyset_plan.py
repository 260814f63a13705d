"""Keyset chunk plans over T-SQL: the server compares the keys (30-snapshots 3.3, decision 0452).

The T-SQL is parsed as T-SQL, transpiled by sqlglot to SQLite and run by a fake DB-API
connection on a small table; the oracle is plain Python over the same rows (NULL sorts first,
as in SQL Server; text keys compare as SQLite's binary collation, the "server" of this test).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

import sqlglot
from hypothesis import given, settings
from hypothesis import strategies as st

from mssql_cdc.options.declared_columns import KeyBound
from mssql_cdc.snapshot.chunk_plan import keyset_chunks
from mssql_cdc.sqlserver.metadata import TableColumn
from mssql_cdc.sqlserver.tsql.chunks import key_at, key_max
from mssql_cdc.sqlserver.tsql.drivers import Session
from mssql_cdc.sqlserver.tsql.snapshot_backend import TsqlSnapshotReader

A = TableColumn("a", 1, "int", False, None, 4, 10, 0)
B = TableColumn("b", 2, "int", False, None, 4, 10, 0)
NAME = TableColumn("name", 1, "nvarchar", False, "Latin1_General_100_BIN2", 40, 0, 0)


class SqliteCursor:
    """A DB-API cursor that runs each T-SQL statement, transpiled, on a SQLite table."""

    def __init__(self, conn: SqliteConnection) -> None:
        self.conn = conn
        self.description: list[tuple[Any, ...]] | None = None
        self._rows: list[Sequence[Any]] = []

    def execute(self, operation: str, params: Sequence[Any] = ()) -> None:
        self.conn.executed.append(operation)
        if operation.startswith("SET "):
            self.description = None
            return
        if "FROM sys.columns" in operation:
            self.description = [(n,) for n in self.conn.column_fields]
            self._rows = list(self.conn.column_rows)
            return
        sqlglot.parse_one(operation, read="tsql")  # valid T-SQL first
        text = sqlglot.transpile(operation, read="tsql", write="sqlite")[0]
        cursor = self.conn.db.execute(text, tuple(params))
        self.description = list(cursor.description or [])
        self._rows = cursor.fetchall()

    def fetchall(self) -> list[Sequence[Any]]:
        rows, self._rows = self._rows, []
        return rows

    def nextset(self) -> bool:
        return False

    def close(self) -> None:
        pass


class SqliteConnection:
    column_fields = (
        "name", "column_id", "base_type", "max_length", "precision", "scale", "is_computed",
        "collation_name",
    )  # fmt: skip

    def __init__(self, create: str, rows: list[tuple[Any, ...]], keys: list[TableColumn]) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.create_collation("Latin1_General_100_BIN2", lambda x, y: (x > y) - (x < y))
        self.db.execute("ATTACH ':memory:' AS dbo")
        self.db.execute(create)
        if rows:
            marks = ", ".join("?" * len(rows[0]))
            self.db.executemany(f"INSERT INTO dbo.t VALUES ({marks})", rows)
        self.column_rows = [
            (k.name, k.column_id, k.sql_type, k.max_length, k.precision, k.scale, False,
             k.collation)
            for k in keys
        ]  # fmt: skip
        self.executed: list[str] = []

    def cursor(self) -> SqliteCursor:
        return SqliteCursor(self)

    def close(self) -> None:
        self.db.close()


def reader_over(
    create: str, rows: list[tuple[Any, ...]], keys: list[TableColumn]
) -> tuple[TsqlSnapshotReader, SqliteConnection]:
    conn = SqliteConnection(create, rows, keys)
    session = Session(conn, "qmark", arrow=False)  # type: ignore[arg-type]
    return TsqlSnapshotReader(session, isolation="readCommitted", lock_timeout_ms=None), conn


class ReaderPlanner:
    """The two questions keyset_chunks asks, answered by the T-SQL reader of table dbo.t."""

    def __init__(self, reader: TsqlSnapshotReader) -> None:
        self.reader = reader

    def keyset_bounds(self, keys: Sequence[str], every: int, upto: KeyBound) -> list[KeyBound]:
        return self.reader.keyset_bounds("dbo", "t", keys, every, upto)

    def first_key_above(self, keys: Sequence[str], bound: KeyBound) -> KeyBound:
        return self.reader.key_at("dbo", "t", keys, bound, inclusive=False, position=0)


def order(key: tuple[Any, ...]) -> tuple[tuple[int, Any], ...]:
    return tuple((0, 0) if p is None else (1, p) for p in key)


def as_text(key: tuple[Any, ...]) -> tuple[str | None, ...]:
    return tuple(None if p is None else str(p) for p in key)


parts = st.none() | st.integers(min_value=0, max_value=3)
pairs = st.tuples(parts, parts)


@settings(derandomize=True, database=None, max_examples=150)
@given(
    keys=st.lists(pairs, unique=True, max_size=20),
    start=st.none() | pairs,
    upto=pairs,
    position=st.integers(min_value=0, max_value=5),
)
def test_the_key_at_a_distance_below_a_ceiling_is_the_python_sorted_one(
    keys: list[tuple[Any, Any]], start: Any, upto: tuple[Any, Any], position: int
) -> None:
    reader, _ = reader_over("CREATE TABLE dbo.t (a int, b int)", keys, [A, B])
    got = reader.key_at("dbo", "t", ["a", "b"], start, inclusive=True, position=position, upto=upto)
    window = sorted(
        (
            k
            for k in keys
            if (start is None or order(k) >= order(start)) and order(k) <= order(upto)
        ),
        key=order,
    )
    assert got == (as_text(window[position]) if position < len(window) else None)


@settings(derandomize=True, database=None, max_examples=60)
@given(keys=st.lists(pairs, unique=True, max_size=20))
def test_the_highest_key_is_the_python_maximum(keys: list[tuple[Any, Any]]) -> None:
    reader, _ = reader_over("CREATE TABLE dbo.t (a int, b int)", keys, [A, B])
    got = reader.key_max("dbo", "t", ["a", "b"])
    assert got == (as_text(max(keys, key=order)) if keys else None)


@settings(derandomize=True, database=None, max_examples=80)
@given(
    keys=st.lists(pairs, unique=True, min_size=1, max_size=25),
    every=st.integers(min_value=1, max_value=6),
    newer=st.lists(pairs, unique=True, max_size=5),
)
def test_a_composite_keyset_plan_tiles_the_keys_up_to_max_like_a_python_sort(
    keys: list[tuple[Any, Any]], every: int, newer: list[tuple[Any, Any]]
) -> None:
    maximum = max(keys, key=order)
    above = [k for k in newer if order(k) > order(maximum)]  # written after S: above MAX
    rows = keys + above
    reader, _ = reader_over("CREATE TABLE dbo.t (a int, b int)", rows, [A, B])
    chunks = keyset_chunks(ReaderPlanner(reader), ["a", "b"], list(as_text(maximum)), every)  # type: ignore[arg-type]

    ordered = sorted(keys, key=order)
    bounds = [as_text(k) for k in ordered[every::every]]
    after = as_text(min(above, key=order)) if above else None
    edges: list[Any] = [None, *[list(b) for b in bounds], None if after is None else list(after)]
    assert chunks == [[edges[i], edges[i + 1]] for i in range(len(edges) - 1)]


def test_a_text_key_plan_cuts_at_every_nth_key_in_the_server_order() -> None:
    names = ["b", "B", "a", "A", "c", "ab", "Ab", "_", "z"]
    reader, conn = reader_over("CREATE TABLE dbo.t (name text)", [(n,) for n in names], [NAME])
    chunks = keyset_chunks(ReaderPlanner(reader), ["name"], "c", 3)  # type: ignore[arg-type]
    ordered = sorted(n for n in names if n <= "c")  # SQLite's BINARY order, the oracle's too
    assert chunks == [[None, ordered[3]], [ordered[3], ordered[6]], [ordered[6], "z"]]
    seeks = [s for s in conn.executed if "TOP (4)" in s]
    assert seeks
    assert all("COLLATE Latin1_General_100_BIN2" in s for s in seeks)


def test_a_keyset_plan_of_a_table_without_keys_above_max_is_open_at_the_top() -> None:
    reader, _ = reader_over("CREATE TABLE dbo.t (name text)", [(n,) for n in ["x", "y"]], [NAME])
    assert keyset_chunks(ReaderPlanner(reader), ["name"], "y", 1) == [[None, "y"], ["y", None]]


def test_the_ceiling_is_a_server_comparison_in_every_seek_piece() -> None:
    statement = key_at("dbo", "t", [A, B], (1, 2), inclusive=True, position=4, upto=(3, 5))
    sqlglot.parse_one(statement.text, read="tsql")
    pieces = statement.text.count("SELECT TOP (5)")
    assert pieces == 3  # a > 1; a = 1 AND b > 2; a = 1 AND b = 2
    ceiling = "((t.[a] IS NULL OR t.[a] < CAST(? AS int))) OR (t.[a] = CAST(? AS int) AND "
    assert statement.text.count(ceiling) == pieces
    ceiling_params = ("3", "3", "5", "3", "5")  # a < 3; a = 3 AND b < 5; a = 3 AND b = 5
    assert statement.params == ("1", *ceiling_params, "1", "2", *ceiling_params, "1", "2",
                                *ceiling_params)  # fmt: skip


def test_the_highest_key_is_one_backward_seek() -> None:
    statement = key_max("dbo", "t", [A, B])
    sqlglot.parse_one(statement.text, read="tsql")
    assert statement.text.startswith("SELECT TOP (1) ")
    assert statement.text.endswith("ORDER BY t.[a] DESC, t.[b] DESC;")
    assert statement.params == ()
