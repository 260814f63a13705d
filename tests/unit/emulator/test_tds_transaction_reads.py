"""What reads see of open transactions over the emulator's TDS front end, through two drivers
nobody here wrote (pymssql and mssql-python), each connection its own session.

The oracle is Microsoft's documentation:
- a transaction's own statements see the changes it made before it commits, and ROLLBACK
  (also to a savepoint) undoes them:
  https://learn.microsoft.com/en-us/sql/t-sql/language-elements/begin-transaction-transact-sql,
  https://learn.microsoft.com/en-us/sql/t-sql/language-elements/rollback-transaction-transact-sql
- READ UNCOMMITTED "specifies that statements can read rows that have been modified by other
  transactions but not yet committed" and its reads "are also not blocked by exclusive locks";
  READ COMMITTED reads are blocked by them:
  https://learn.microsoft.com/en-us/sql/t-sql/statements/set-transaction-isolation-level-transact-sql
- the table hints READUNCOMMITTED and NOLOCK (its equivalent) allow dirty reads of one table:
  https://learn.microsoft.com/en-us/sql/t-sql/queries/hints-transact-sql-table
- the capture process reads the transaction log and writes only committed changes to change
  tables: https://learn.microsoft.com/en-us/sql/relational-databases/track-changes/about-change-data-capture-sql-server

The expected rows are written out here by hand from those rules.
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

COMMITTED = [(1, "new"), (2, "new"), (3, "new")]
# What the writer's transaction leaves: 0 and 9 inserted, 2 paid, 3 deleted.
AS_LEFT = [(0, "early"), (1, "new"), (2, "paid"), (9, "late")]
WRITES = [
    "INSERT INTO dbo.orders (order_id, status) VALUES (9, N'late'), (0, N'early')",
    "UPDATE dbo.orders SET status = N'paid' WHERE order_id = 2",
    "DELETE FROM dbo.orders WHERE order_id = 3",
]
ROWS = "SELECT order_id, status FROM dbo.orders{hint} ORDER BY order_id"


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[Emulator]:
    emu = Emulator.create(tmp_path / "shop.db", start="2026-09-28T13:50:00")
    emu.create_table(
        "dbo.orders", {"order_id": "int", "status": "nvarchar(20)"}, primary_key="order_id"
    )
    emu.enable_cdc("dbo.orders")
    emu.commit(
        [("insert", "dbo.orders", {"order_id": i, "status": "new"}) for i in (1, 2, 3)],
        at="2026-09-28T14:00",
    )
    yield emu
    emu.close()


@pytest.fixture
def server(emulator: Emulator) -> Iterator[TdsServer]:
    with emulator.serve() as srv:
        yield srv


def rows(conn: Any, sql: str) -> list[tuple[int, str]]:
    cursor = conn.cursor()
    cursor.execute(sql)
    return [(int(r[0]), str(r[1])) for r in cursor.fetchall()]


def scalar(conn: Any, sql: str) -> Any:
    cursor = conn.cursor()
    cursor.execute(sql)
    got = cursor.fetchall()
    assert len(got) == 1, got
    return got[0][0]


def open_writes(conn: Any) -> None:
    cursor = conn.cursor()
    cursor.execute("BEGIN TRAN")
    for sql in WRITES:
        cursor.execute(sql)


def test_a_connections_own_reads_inside_its_transaction_see_its_inserts_updates_and_deletes(
    server: TdsServer,
) -> None:
    conn = connect(server)
    try:
        open_writes(conn)
        assert rows(conn, ROWS.format(hint="")) == AS_LEFT
        assert scalar(conn, "SELECT COUNT(*) FROM dbo.orders") == 4
        assert scalar(conn, "SELECT COUNT(*) FROM dbo.orders WHERE order_id = 3") == 0
        exists = (
            "SELECT CASE WHEN EXISTS (SELECT 1 FROM dbo.orders WHERE order_id = 9)"
            " THEN 1 ELSE 0 END"
        )
        assert scalar(conn, exists) == 1
        joined = (
            "SELECT a.order_id, b.status FROM dbo.orders a JOIN dbo.orders b"
            " ON a.order_id = b.order_id WHERE b.status = N'early'"
        )
        assert rows(conn, joined) == [(0, "early")]
        copied = (
            "DECLARE @t TABLE (order_id int, status nvarchar(20));"
            " INSERT INTO @t SELECT order_id, status FROM dbo.orders;"
            " SELECT order_id, status FROM @t ORDER BY order_id"
        )
        assert rows(conn, copied) == AS_LEFT
        conn.cursor().execute("ROLLBACK")
        assert rows(conn, ROWS.format(hint="")) == COMMITTED
    finally:
        conn.close()


def test_an_update_and_a_delete_with_a_where_change_the_rows_the_transaction_wrote(
    emulator: Emulator, server: TdsServer
) -> None:
    conn = connect(server)
    try:
        open_writes(conn)
        cursor = conn.cursor()
        # Rows 0 and 9 exist only in this transaction; the WHERE reads them.
        cursor.execute(
            "UPDATE dbo.orders SET status = N'checked' WHERE order_id IN (0, 9); SELECT @@ROWCOUNT"
        )
        assert cursor.fetchall()[0][0] == 2
        cursor.execute("DELETE FROM dbo.orders WHERE status = N'checked'; SELECT @@ROWCOUNT")
        assert cursor.fetchall()[0][0] == 2
        assert rows(conn, ROWS.format(hint="")) == [(1, "new"), (2, "paid")]
        cursor.execute("COMMIT")
    finally:
        conn.close()
    assert sorted(int(str(r["order_id"])) for r in emulator.rows("dbo.orders")) == [1, 2]


def test_rollback_to_a_savepoint_hides_only_the_writes_after_it_from_the_own_reads(
    server: TdsServer,
) -> None:
    conn = connect(server)
    try:
        cursor = conn.cursor()
        cursor.execute("BEGIN TRAN")
        cursor.execute("INSERT INTO dbo.orders (order_id, status) VALUES (7, N'kept')")
        cursor.execute("SAVE TRAN before_eight")
        cursor.execute("INSERT INTO dbo.orders (order_id, status) VALUES (8, N'undone')")
        cursor.execute("UPDATE dbo.orders SET status = N'undone' WHERE order_id = 1")
        assert rows(conn, ROWS.format(hint=""))[-2:] == [(7, "kept"), (8, "undone")]
        cursor.execute("ROLLBACK TRAN before_eight")
        assert rows(conn, ROWS.format(hint="")) == [*COMMITTED, (7, "kept")]
        cursor.execute("ROLLBACK")
        assert rows(conn, ROWS.format(hint="")) == COMMITTED
    finally:
        conn.close()


def test_pymssql_with_its_default_autocommit_sees_its_insert_before_it_commits(
    server: TdsServer,
) -> None:
    conn = connect(server)
    conn.autocommit(False)
    other = connect(server, "mssql-python")
    try:
        conn.cursor().execute("INSERT INTO dbo.orders (order_id, status) VALUES (4, N'mine')")
        assert rows(conn, "SELECT order_id, status FROM dbo.orders WHERE order_id = 4") == [
            (4, "mine")
        ]
        with pytest.raises(mssql_python.Error):  # READ COMMITTED elsewhere: blocked, then 1222
            rows(other, "SET LOCK_TIMEOUT 200; " + ROWS.format(hint=""))
        conn.rollback()
        assert rows(other, ROWS.format(hint="")) == COMMITTED
    finally:
        conn.close()
        other.close()


@pytest.mark.parametrize("reader_driver", ["pymssql", "mssql-python"])
def test_a_read_uncommitted_session_sees_another_connections_uncommitted_rows_without_waiting(
    server: TdsServer, reader_driver: str
) -> None:
    writer = connect(server)
    reader = connect(server, reader_driver)
    try:
        open_writes(writer)
        reader.cursor().execute("SET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED")
        reader.cursor().execute("SET LOCK_TIMEOUT 0")  # a read that waited would fail at once
        assert rows(reader, ROWS.format(hint="")) == AS_LEFT
        assert scalar(reader, "SELECT COUNT(*) FROM dbo.orders") == 4
        writer.cursor().execute("ROLLBACK")
        assert rows(reader, ROWS.format(hint="")) == COMMITTED
        reader.cursor().execute("SET TRANSACTION ISOLATION LEVEL READ COMMITTED")
        open_writes(writer)
        with pytest.raises((pymssql.Error, mssql_python.Error)):
            rows(reader, ROWS.format(hint=""))  # READ COMMITTED again: blocked, 1222 at once
        writer.cursor().execute("COMMIT")
        assert rows(reader, ROWS.format(hint="")) == AS_LEFT
    finally:
        writer.close()
        reader.close()


@pytest.mark.parametrize("hint", [" WITH (NOLOCK)", " WITH (READUNCOMMITTED)"])
def test_a_nolock_or_readuncommitted_hint_reads_that_table_dirty_at_read_committed(
    server: TdsServer, hint: str
) -> None:
    writer = connect(server, "mssql-python")
    reader = connect(server)
    try:
        open_writes(writer)
        reader.cursor().execute("SET LOCK_TIMEOUT 0")
        assert rows(reader, ROWS.format(hint=hint)) == AS_LEFT
        with pytest.raises(pymssql.Error) as waited:
            rows(reader, ROWS.format(hint=""))  # the same session without the hint is blocked
        assert waited.value.args[0] == 1222
    finally:
        writer.close()
        reader.close()


def test_a_dirty_read_never_shows_uncommitted_changes_in_a_change_table(
    emulator: Emulator, server: TdsServer
) -> None:
    writer = connect(server)
    reader = connect(server)
    try:
        open_writes(writer)
        reader.cursor().execute("SET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED")
        emulator.capture()
        assert scalar(reader, "SELECT COUNT(*) FROM cdc.dbo_orders_CT") == 3  # the three inserts
        assert scalar(reader, "SELECT COUNT(*) FROM cdc.dbo_orders_CT WITH (NOLOCK)") == 3
        writer.cursor().execute("COMMIT")
        emulator.capture()
        # Committed now: 2 inserts, an update's two images, a delete.
        assert scalar(reader, "SELECT COUNT(*) FROM cdc.dbo_orders_CT") == 3 + 5
    finally:
        writer.close()
        reader.close()


def test_a_nolock_read_over_tds_sees_an_open_transaction_of_the_python_api(
    emulator: Emulator, server: TdsServer
) -> None:
    txn = emulator.begin()
    txn.execute([("update", "dbo.orders", {"order_id": 1, "status": "held"})])
    reader = connect(server, "mssql-python")
    try:
        reader.cursor().execute("SET LOCK_TIMEOUT 0")
        with_hint = "SELECT order_id, status FROM dbo.orders WITH (NOLOCK) ORDER BY order_id"
        assert rows(reader, with_hint) == [(1, "held"), (2, "new"), (3, "new")]
        txn.rollback()
        assert rows(reader, with_hint) == COMMITTED
    finally:
        reader.close()
