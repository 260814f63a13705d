"""INSERT ... SELECT into a captured table over the emulator's TDS front end, through pymssql.

The oracle is Microsoft's documentation and plain Python over the rows the test wrote:
- INSERT takes a SELECT as the source of its rows, matched to the column list by position:
  https://learn.microsoft.com/en-us/sql/t-sql/statements/insert-transact-sql
- one statement is one transaction, so its change rows share one commit LSN (`__$start_lsn`):
  https://learn.microsoft.com/en-us/sql/relational-databases/system-tables/cdc-capture-instance-ct-transact-sql
- a select list shorter or longer than the insert list is error 120 or 121 (sys.messages).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymssql
import pytest

from mssql_cdc.emulator import Emulator, TdsServer
from tests.unit.support.tds_clients import connect

START = {1: "new", 2: "paid", 3: "new"}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[TdsServer]:
    emu = Emulator.create(tmp_path / "shop.db")
    emu.create_table(
        "dbo.orders", {"order_id": "int", "status": "nvarchar(20)"}, primary_key="order_id"
    )
    emu.enable_cdc("dbo.orders")
    emu.commit([("insert", "dbo.orders", {"order_id": k, "status": s}) for k, s in START.items()])
    with emu.serve() as srv:
        yield srv
    emu.close()


def table(cursor: Any) -> dict[int, str]:
    cursor.execute("SELECT order_id, status FROM dbo.orders")
    return dict(cursor.fetchall())


def inserts(cursor: Any) -> list[tuple[bytes, int]]:
    """The change table's insert rows: (commit LSN, key), in key order."""
    cursor.execute(
        "SELECT __$start_lsn, order_id FROM cdc.dbo_orders_CT WHERE __$operation = 2 "
        "ORDER BY order_id"
    )
    return [(bytes(lsn), key) for lsn, key in cursor.fetchall()]


def test_insert_select_from_the_same_table_inserts_each_selected_row_once_at_one_lsn(
    server: TdsServer,
) -> None:
    conn = connect(server)
    try:
        cursor = conn.cursor()
        cursor.execute(
            "INSERT INTO dbo.orders (order_id, status) "
            "SELECT order_id + 100, status FROM dbo.orders WHERE status = N'new'"
        )
        assert cursor.rowcount == 2
        expected = {**START, **{k + 100: s for k, s in START.items() if s == "new"}}
        assert table(cursor) == expected
        new_rows = [(lsn, key) for lsn, key in inserts(cursor) if key > 100]
        assert [key for _, key in new_rows] == [101, 103]
        assert len({lsn for lsn, _ in new_rows}) == 1  # one statement, one transaction
    finally:
        conn.close()


def test_insert_select_of_constants_without_a_column_list_fills_the_columns_in_order(
    server: TdsServer,
) -> None:
    conn = connect(server)
    try:
        cursor = conn.cursor()
        cursor.execute("INSERT INTO dbo.orders SELECT 7, N'shipped'")
        assert table(cursor)[7] == "shipped"
        cursor.execute("INSERT dbo.orders (order_id, status) SELECT 8, N'x' WHERE 1 = 0")
        assert 8 not in table(cursor)
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("select", "number"),
    [("SELECT order_id + 200 FROM dbo.orders", 120), ("SELECT 9, N'a', N'b'", 121)],
)
def test_a_select_list_of_another_length_than_the_insert_list_is_refused_with_no_row(
    server: TdsServer, select: str, number: int
) -> None:
    conn = connect(server)
    try:
        cursor = conn.cursor()
        with pytest.raises(pymssql.Error) as caught:
            cursor.execute(f"INSERT INTO dbo.orders (order_id, status) {select}")
        assert caught.value.args[0] == number
        assert table(cursor) == START
    finally:
        conn.close()


def test_a_duplicate_key_in_the_selected_rows_inserts_none_of_them(server: TdsServer) -> None:
    conn = connect(server)
    try:
        cursor = conn.cursor()
        with pytest.raises(pymssql.Error) as caught:
            cursor.execute(
                "INSERT INTO dbo.orders (order_id, status) "
                "SELECT order_id + 2, status FROM dbo.orders"  # 3 is taken, 4 and 5 are not
            )
        assert caught.value.args[0] == 2627
        assert table(cursor) == START
        assert [key for _, key in inserts(cursor)] == [1, 2, 3]
    finally:
        conn.close()


def test_a_rolled_back_insert_select_leaves_no_row_and_no_change_row(server: TdsServer) -> None:
    conn = connect(server)
    conn.autocommit(False)  # pymssql's own default: a transaction until commit or rollback
    try:
        cursor = conn.cursor()
        cursor.execute("INSERT INTO dbo.orders (order_id, status) SELECT 50, N'held'")
        assert table(cursor)[50] == "held"  # the connection's own write
        conn.rollback()
        assert 50 not in table(cursor)
        assert [key for _, key in inserts(cursor)] == [1, 2, 3]
    finally:
        conn.close()
