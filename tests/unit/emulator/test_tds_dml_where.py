"""UPDATE and DELETE with any WHERE clause over the emulator's TDS front end, through pymssql.

The oracle is Microsoft's documentation and plain Python over the rows the test wrote:
- UPDATE and DELETE change every row their search condition selects, and no row when none
  matches: https://learn.microsoft.com/en-us/sql/t-sql/queries/update-transact-sql and
  https://learn.microsoft.com/en-us/sql/t-sql/statements/delete-transact-sql
- a statement is one transaction (autocommit), and a transaction's change rows share its commit
  LSN in the change table (`__$start_lsn`: "the commit LSN of the change"):
  https://learn.microsoft.com/en-us/sql/relational-databases/system-tables/cdc-capture-instance-ct-transact-sql
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymssql
import pytest

from mssql_cdc.emulator import Emulator, TdsServer

START = {i: ("new" if i % 2 else "paid", i) for i in range(1, 8)}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[TdsServer]:
    emu = Emulator.create(tmp_path / "shop.db")
    emu.create_table(
        "dbo.orders",
        {"order_id": "int", "status": "nvarchar(20)", "qty": "int"},
        primary_key="order_id",
    )
    emu.enable_cdc("dbo.orders")
    emu.commit(
        [
            ("insert", "dbo.orders", {"order_id": k, "status": s, "qty": q})
            for k, (s, q) in START.items()
        ]
    )
    with emu.serve() as srv:
        yield srv
    emu.close()


def run(server: TdsServer, *statements: str) -> tuple[list[int], list[tuple[Any, ...]]]:
    """Each statement in autocommit; the rows each changed, then the table by key."""
    conn: Any = pymssql.connect(**server.connect_kwargs("pymssql"), login_timeout=10)
    conn.autocommit(True)
    try:
        cursor = conn.cursor()
        counts = []
        for sql in statements:
            cursor.execute(sql)
            counts.append(cursor.rowcount)
        cursor.execute("SELECT order_id, status, qty FROM dbo.orders ORDER BY order_id")
        return counts, cursor.fetchall()
    finally:
        conn.close()


def changes(server: TdsServer) -> list[tuple[bytes, int, int]]:
    conn: Any = pymssql.connect(**server.connect_kwargs("pymssql"), login_timeout=10)
    try:
        cursor = conn.cursor()
        cursor.execute(
            "DECLARE @f binary(10) = sys.fn_cdc_get_min_lsn('dbo_orders'), "
            "@t binary(10) = sys.fn_cdc_get_max_lsn(); "
            "SELECT __$start_lsn, __$operation, order_id "
            "FROM cdc.fn_cdc_get_all_changes_dbo_orders(@f, @t, N'all')"
        )
        return [tuple(r) for r in cursor.fetchall()]
    finally:
        conn.close()


def test_an_update_by_a_non_key_condition_changes_every_matching_row(server: TdsServer) -> None:
    counts, rows = run(server, "UPDATE dbo.orders SET status = N'shipped' WHERE status = N'paid'")
    expected = {k: ("shipped" if s == "paid" else s, q) for k, (s, q) in START.items()}
    assert counts == [sum(1 for s, _ in START.values() if s == "paid")]
    assert rows == [(k, s, q) for k, (s, q) in sorted(expected.items())]


def test_a_delete_by_a_range_removes_exactly_those_rows(server: TdsServer) -> None:
    counts, rows = run(server, "DELETE FROM dbo.orders WHERE qty > 5 OR order_id IN (1, 2)")
    kept = {k: v for k, v in START.items() if not (v[1] > 5 or k in (1, 2))}
    assert counts == [len(START) - len(kept)]
    assert rows == [(k, s, q) for k, (s, q) in sorted(kept.items())]


def test_a_condition_that_matches_nothing_changes_nothing(server: TdsServer) -> None:
    counts, rows = run(server, "UPDATE dbo.orders SET qty = 0 WHERE status = N'none'")
    assert counts == [0]
    assert rows == [(k, s, q) for k, (s, q) in sorted(START.items())]


def test_an_update_without_where_changes_every_row(server: TdsServer) -> None:
    counts, rows = run(server, "UPDATE dbo.orders SET qty = 1")
    assert counts == [len(START)]
    assert {q for _, _, q in rows} == {1}


def test_one_statement_is_one_transaction_its_change_rows_share_one_lsn(
    server: TdsServer,
) -> None:
    run(server, "UPDATE dbo.orders SET qty = 0 WHERE status = N'new'")
    run(server, "DELETE FROM dbo.orders WHERE status = N'paid'")
    got = changes(server)
    updates = [(lsn, k) for lsn, op, k in got if op == 4]
    deletes = [(lsn, k) for lsn, op, k in got if op == 1]
    assert sorted(k for _, k in updates) == sorted(k for k, (s, _) in START.items() if s == "new")
    assert sorted(k for _, k in deletes) == sorted(k for k, (s, _) in START.items() if s == "paid")
    assert len({lsn for lsn, _ in updates}) == 1
    assert len({lsn for lsn, _ in deletes}) == 1
    assert {lsn for lsn, _ in updates} != {lsn for lsn, _ in deletes}


def test_an_unknown_column_in_the_condition_is_error_207(server: TdsServer) -> None:
    with pytest.raises(pymssql.Error) as raised:
        run(server, "DELETE FROM dbo.orders WHERE nosuch = 1")
    assert raised.value.args[0] == 207


def test_a_set_value_may_read_the_rows_own_columns(server: TdsServer) -> None:
    # "SET column_name = expression", where the expression may name the table's columns: each
    # row's own values (the UPDATE page's examples add to a column's current value).
    counts, rows = run(
        server,
        "UPDATE dbo.orders SET qty = qty + 10, status = CONCAT(status, N'!') "
        "WHERE status = N'paid'",
        "UPDATE dbo.orders SET order_id = order_id + 100 WHERE order_id = 1",
    )
    expected = {
        (k + 100 if k == 1 else k): ((s + "!", q + 10) if s == "paid" else (s, q))
        for k, (s, q) in START.items()
    }
    assert counts == [sum(1 for s, _ in START.values() if s == "paid"), 1]
    assert rows == [(k, s, q) for k, (s, q) in sorted(expected.items())]
