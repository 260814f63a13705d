"""Transactions over the emulator's TDS front end, through drivers nobody here wrote.

The oracle is Microsoft's documentation:
- BEGIN TRANSACTION: https://learn.microsoft.com/en-us/sql/t-sql/language-elements/begin-transaction-transact-sql
- COMMIT TRANSACTION (3902 without one): https://learn.microsoft.com/en-us/sql/t-sql/language-elements/commit-transaction-transact-sql
- ROLLBACK TRANSACTION (to a savepoint; 3903 without one): https://learn.microsoft.com/en-us/sql/t-sql/language-elements/rollback-transaction-transact-sql
- SAVE TRANSACTION: https://learn.microsoft.com/en-us/sql/t-sql/language-elements/save-transaction-transact-sql
- @@TRANCOUNT: https://learn.microsoft.com/en-us/sql/t-sql/functions/trancount-transact-sql
- SET IMPLICIT_TRANSACTIONS: https://learn.microsoft.com/en-us/sql/t-sql/statements/set-implicit-transactions-transact-sql
- pymssql's `connect(autocommit=False)` (its default) sends BEGIN TRAN and commit/rollback send
  COMMIT TRAN / ROLLBACK TRAN then BEGIN TRAN (pymssql's own source); ODBC's autocommit off is
  SET IMPLICIT_TRANSACTIONS ON and SQLEndTran a transaction manager request (MS-TDS 2.2.6.9).

What a rolled-back or open transaction leaves is read with the emulator's own Python API,
independent of the wire.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mssql_python
import pymssql
import pytest

from mssql_cdc.emulator import Emulator, TdsServer
from tests.unit.support.tds_clients import connect


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[Emulator]:
    emu = Emulator.create(tmp_path / "shop.db", start="2026-09-28T13:50:00")
    emu.create_table(
        "dbo.orders", {"order_id": "int", "status": "nvarchar(20)"}, primary_key="order_id"
    )
    emu.enable_cdc("dbo.orders")
    emu.commit([("insert", "dbo.orders", {"order_id": 1, "status": "new"})], at="2026-09-28T14:00")
    yield emu
    emu.close()


@pytest.fixture
def server(emulator: Emulator) -> Iterator[TdsServer]:
    with emulator.serve() as srv:
        yield srv


def pymssql_default(server: TdsServer) -> Any:
    """pymssql.connect as a user calls it: autocommit left at its default, False."""
    kwargs = server.connect_kwargs("pymssql")
    del kwargs["autocommit"]
    return pymssql.connect(**kwargs, login_timeout=10, timeout=10)


def scalar(conn: Any, sql: str) -> Any:
    cursor = conn.cursor()
    cursor.execute(sql)
    rows = cursor.fetchall()
    assert len(rows) == 1, rows
    return rows[0][0]


def order_ids(emulator: Emulator) -> list[object]:
    return sorted(int(str(r["order_id"])) for r in emulator.rows("dbo.orders"))


def changed_ids(emulator: Emulator) -> list[int]:
    return [int(str(r["order_id"])) for r in emulator.change_rows("dbo_orders")]


def test_pymssql_with_its_default_autocommit_connects_and_its_rollback_leaves_no_row(
    emulator: Emulator, server: TdsServer
) -> None:
    conn = pymssql_default(server)
    try:
        cursor = conn.cursor()
        cursor.execute("INSERT INTO dbo.orders (order_id, status) VALUES (2, N'rolled back')")
        assert scalar(conn, "SELECT @@TRANCOUNT") == 1
        conn.rollback()
        cursor.execute("INSERT INTO dbo.orders (order_id, status) VALUES (3, N'kept')")
        conn.commit()
    finally:
        conn.close()
    emulator.capture()
    assert order_ids(emulator) == [1, 3]
    assert changed_ids(emulator) == [1, 3]  # the rolled-back insert is never captured


def test_mssql_python_with_autocommit_off_rolls_back_to_no_row_and_no_change_row(
    emulator: Emulator, server: TdsServer
) -> None:
    conn = mssql_python.connect(
        server.connection_string("mssql-python"), autocommit=False, timeout=10
    )
    try:
        cursor = conn.cursor()
        cursor.execute("INSERT INTO dbo.orders (order_id, status) VALUES (2, N'rolled back')")
        conn.rollback()
        cursor.execute("INSERT INTO dbo.orders (order_id, status) VALUES (3, N'kept')")
        conn.commit()
    finally:
        conn.close()
    emulator.capture()
    assert order_ids(emulator) == [1, 3]
    assert changed_ids(emulator) == [1, 3]


def test_nested_begins_count_in_trancount_and_only_the_outermost_commit_commits(
    emulator: Emulator, server: TdsServer
) -> None:
    conn = connect(server)
    try:
        assert scalar(conn, "SELECT @@TRANCOUNT") == 0
        assert scalar(conn, "BEGIN TRAN; BEGIN TRANSACTION; SELECT @@TRANCOUNT") == 2
        conn.cursor().execute("INSERT INTO dbo.orders (order_id, status) VALUES (2, N'a')")
        assert scalar(conn, "COMMIT; SELECT @@TRANCOUNT") == 1
        assert order_ids(emulator) == [1]  # the inner COMMIT only counted down
        assert scalar(conn, "COMMIT TRANSACTION; SELECT @@TRANCOUNT") == 0
    finally:
        conn.close()
    assert order_ids(emulator) == [1, 2]


def test_commit_and_rollback_without_a_transaction_get_3902_and_3903(server: TdsServer) -> None:
    conn = connect(server)
    try:
        with pytest.raises(pymssql.Error) as commit:
            conn.cursor().execute("COMMIT TRAN")
        assert commit.value.args[0] == 3902
        assert b"no corresponding BEGIN TRANSACTION" in commit.value.args[1]
        with pytest.raises(pymssql.Error) as rollback:
            conn.cursor().execute("ROLLBACK")
        assert rollback.value.args[0] == 3903
    finally:
        conn.close()


def test_a_rollback_in_a_batch_without_semicolons_undoes_the_insert_before_it(
    emulator: Emulator, server: TdsServer
) -> None:
    conn = connect(server)
    try:
        conn.cursor().execute(
            "BEGIN TRAN INSERT INTO dbo.orders (order_id, status) VALUES (2, N'x') ROLLBACK TRAN"
        )
        assert scalar(conn, "SELECT @@TRANCOUNT") == 0
    finally:
        conn.close()
    assert order_ids(emulator) == [1]


def test_rollback_to_a_savepoint_undoes_only_the_writes_after_it(
    emulator: Emulator, server: TdsServer
) -> None:
    conn = connect(server)
    try:
        cursor = conn.cursor()
        cursor.execute("BEGIN TRAN outer_t")
        cursor.execute("INSERT INTO dbo.orders (order_id, status) VALUES (2, N'before')")
        cursor.execute("SAVE TRAN before_three")
        cursor.execute("INSERT INTO dbo.orders (order_id, status) VALUES (3, N'after')")
        cursor.execute("ROLLBACK TRAN before_three")
        assert scalar(conn, "SELECT @@TRANCOUNT") == 1  # a savepoint rollback keeps it open
        with pytest.raises(pymssql.Error) as unknown:
            cursor.execute("ROLLBACK TRAN Before_Three")  # names are case-sensitive
        assert unknown.value.args[0] == 6401
        cursor.execute("COMMIT")
    finally:
        conn.close()
    emulator.capture()
    assert order_ids(emulator) == [1, 2]
    assert changed_ids(emulator) == [1, 2]


def test_an_open_transactions_insert_makes_another_sessions_read_committed_read_wait(
    emulator: Emulator, server: TdsServer
) -> None:
    writer = connect(server)
    reader = connect(server)
    try:
        writer.cursor().execute("BEGIN TRAN")
        writer.cursor().execute("INSERT INTO dbo.orders (order_id, status) VALUES (2, N'open')")
        # The writer's own read does not wait for its own locks.
        assert scalar(writer, "SET LOCK_TIMEOUT 0; SELECT COUNT(*) FROM dbo.orders") >= 1
        with pytest.raises(pymssql.Error) as waited:
            reader.cursor().execute("SET LOCK_TIMEOUT 200; SELECT COUNT(*) FROM dbo.orders")
        assert waited.value.args[0] == 1222
        writer.cursor().execute("COMMIT")
        assert scalar(reader, "SELECT COUNT(*) FROM dbo.orders") == 2
    finally:
        writer.close()
        reader.close()


def test_transactions_are_captured_in_commit_order_not_begin_order(
    emulator: Emulator, server: TdsServer
) -> None:
    first = connect(server)
    second = connect(server)
    try:
        first.cursor().execute("BEGIN TRAN")
        first.cursor().execute("INSERT INTO dbo.orders (order_id, status) VALUES (10, N'first')")
        second.cursor().execute("BEGIN TRAN")
        second.cursor().execute("INSERT INTO dbo.orders (order_id, status) VALUES (20, N'second')")
        second.cursor().execute("COMMIT")
        first.cursor().execute("COMMIT")
    finally:
        first.close()
        second.close()
    emulator.capture()
    rows = {int(str(r["order_id"])): r for r in emulator.change_rows("dbo_orders")}
    assert str(rows[20]["__$start_lsn"]) < str(rows[10]["__$start_lsn"])


def test_implicit_transactions_begin_at_a_write_and_a_closed_connection_rolls_back(
    emulator: Emulator, server: TdsServer
) -> None:
    conn = connect(server)
    try:
        cursor = conn.cursor()
        cursor.execute("SET IMPLICIT_TRANSACTIONS ON")
        assert scalar(conn, "SELECT @@TRANCOUNT") == 0  # a SELECT of no table begins none
        cursor.execute("INSERT INTO dbo.orders (order_id, status) VALUES (2, N'implicit')")
        assert scalar(conn, "SELECT @@TRANCOUNT") == 1
    finally:
        conn.close()
    assert order_ids(emulator) == [1]
