"""Subqueries over the emulator's TDS front end, through mssql-python (Microsoft's ODBC driver).

The oracle is Microsoft's T-SQL reference and plain Python over the rows committed here:
- subqueries, correlated ones run per outer row:
  https://learn.microsoft.com/en-us/sql/relational-databases/performance/subqueries
- EXISTS: https://learn.microsoft.com/en-us/sql/t-sql/language-elements/exists-transact-sql
- IN: https://learn.microsoft.com/en-us/sql/t-sql/language-elements/in-transact-sql
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import mssql_python
import pytest

from mssql_cdc.emulator import Emulator, TdsServer

ROWS = [(1, "north", 30), (2, "north", 50), (3, "south", 50), (4, "east", 20)]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[TdsServer]:
    emu = Emulator.create(tmp_path / "shop.db", start="2026-09-28T13:50:00")
    emu.create_table(
        "dbo.orders",
        {"order_id": "int", "region": "nvarchar(10)", "amount": "int"},
        primary_key="order_id",
    )
    emu.commit(
        [("insert", "dbo.orders", {"order_id": k, "region": r, "amount": a}) for k, r, a in ROWS]
    )
    with emu.serve() as srv:
        yield srv
    emu.close()


def test_correlated_and_uncorrelated_subqueries_answer_as_python_computes(
    server: TdsServer,
) -> None:
    conn = mssql_python.connect(server.connection_string("mssql-python"), timeout=10)
    try:
        cursor = conn.cursor()
        cursor.execute(
            "SELECT o.order_id, "
            "(SELECT SUM(p.amount) FROM dbo.orders AS p WHERE p.region = o.region) AS region_total "
            "FROM dbo.orders AS o "
            "WHERE o.amount >= (SELECT AVG(amount) FROM dbo.orders) "
            "AND NOT EXISTS (SELECT 1 FROM dbo.orders AS q WHERE q.region = o.region "
            "AND q.order_id > o.order_id) "
            "AND o.region IN (SELECT region FROM dbo.orders WHERE amount > 25) "
            "ORDER BY o.order_id"
        )
        got = [tuple(row) for row in cursor.fetchall()]
    finally:
        conn.close()
    average = sum(a for _, _, a in ROWS) // len(ROWS)  # AVG of int is int in T-SQL
    expected = [
        (k, sum(a2 for _, r2, a2 in ROWS if r2 == r))
        for k, r, a in ROWS
        if a >= average
        and not any(r2 == r and k2 > k for k2, r2, _ in ROWS)
        and r in {r2 for _, r2, a2 in ROWS if a2 > 25}
    ]
    assert got == expected
    assert expected  # the query selects something


def test_concat_and_coalesce_answer_as_their_pages_say(server: TdsServer) -> None:
    """CONCAT (https://learn.microsoft.com/en-us/sql/t-sql/functions/concat-transact-sql): its
    example A, and NULL as an empty string; COALESCE
    (https://learn.microsoft.com/en-us/sql/t-sql/language-elements/coalesce-transact-sql): the
    first argument that is not NULL."""
    conn = mssql_python.connect(server.connection_string("mssql-python"), timeout=10)
    try:
        cursor = conn.cursor()
        cursor.execute(
            "SELECT CONCAT('Happy ', 'Birthday ', 11, '/', '25') AS a, "
            "CONCAT(N'x', NULL, N'y') AS b, COALESCE(NULL, NULL, N'third') AS c"
        )
        assert tuple(cursor.fetchone()) == ("Happy Birthday 11/25", "xy", "third")
    finally:
        conn.close()
