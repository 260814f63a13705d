"""DDL over TDS with CDC's rules, sp_cdc_enable_table's argument checks, expressions in
INSERT ... VALUES, and the update-mask functions, through pymssql (FreeTDS).

The oracle is Microsoft's documentation (each test cites its page) or values the test wrote
itself; connections stay on 127.0.0.1.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymssql
import pytest

from mssql_cdc.emulator import Emulator, TdsServer
from tests.unit.emulator.test_tds_drivers import server_error
from tests.unit.support.tds_clients import connect

ERRORS_22000 = (
    "https://learn.microsoft.com/en-us/sql/relational-databases/errors-events/"
    "database-engine-events-and-errors-22000-to-22999"
)


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[Emulator]:
    emu = Emulator.create(tmp_path / "shop.db", start="2026-09-28T13:50:00")
    yield emu
    emu.close()


@pytest.fixture
def server(emulator: Emulator) -> Iterator[TdsServer]:
    with emulator.serve() as srv:
        yield srv


@pytest.fixture
def conn(server: TdsServer) -> Iterator[Any]:
    c = connect(server, "pymssql")
    yield c
    c.close()


def run(conn: Any, sql: str) -> None:
    conn.cursor().execute(sql)


def rows(conn: Any, sql: str) -> list[tuple[Any, ...]]:
    cursor = conn.cursor()
    cursor.execute(sql)
    return [tuple(r) for r in cursor.fetchall()]


def error_of(conn: Any, sql: str) -> tuple[int | None, str]:
    with pytest.raises(pymssql.Error) as caught:
        run(conn, sql)
    return server_error(caught.value)


ORDERS = (
    "CREATE TABLE dbo.orders (order_id int NOT NULL PRIMARY KEY, status nvarchar(20) NULL, "
    "amount decimal(10,2) NOT NULL)"
)


def test_a_table_created_over_the_wire_takes_rows_and_keeps_its_key_and_nullability(
    conn: Any,
) -> None:
    """CREATE TABLE with PRIMARY KEY and NOT NULL: a duplicate key is 2627, a NULL into a NOT
    NULL column 515 (https://learn.microsoft.com/en-us/sql/t-sql/statements/create-table-transact-sql)."""
    run(conn, ORDERS)
    run(conn, "INSERT INTO dbo.orders (order_id, status, amount) VALUES (1, N'new', 12.50)")
    assert rows(conn, "SELECT order_id, status, amount FROM dbo.orders") == [(1, "new", 12.5)]
    assert error_of(conn, "INSERT INTO dbo.orders VALUES (1, N'again', 1.00)")[0] == 2627
    assert error_of(conn, "INSERT INTO dbo.orders VALUES (2, N'x', NULL)")[0] == 515
    assert error_of(conn, ORDERS)[0] == 2714


def test_a_table_constraint_primary_key_over_two_columns_keys_the_table(conn: Any) -> None:
    """CONSTRAINT name PRIMARY KEY CLUSTERED (a, b) (CREATE TABLE's table constraint)."""
    run(
        conn,
        "CREATE TABLE lines (order_id int NOT NULL, line int NOT NULL, qty int, "
        "CONSTRAINT PK_lines PRIMARY KEY CLUSTERED (order_id ASC, line))",
    )
    run(conn, "INSERT INTO lines VALUES (1, 1, 5), (1, 2, 6)")
    assert error_of(conn, "INSERT INTO lines VALUES (1, 2, 7)")[0] == 2627
    run(conn, "UPDATE lines SET qty = 9 WHERE order_id = 1 AND line = 2")
    assert rows(conn, "SELECT line, qty FROM lines ORDER BY line") == [(1, 5), (2, 9)]


def test_alter_table_on_a_captured_table_records_ddl_history(conn: Any) -> None:
    """An ALTER TABLE ADD of a captured table adds a row to cdc.ddl_history, which
    sp_cdc_get_ddl_history returns
    (https://learn.microsoft.com/en-us/sql/relational-databases/system-tables/cdc-ddl-history-transact-sql,
    https://learn.microsoft.com/en-us/sql/relational-databases/system-stored-procedures/sys-sp-cdc-get-ddl-history-transact-sql)."""
    run(conn, ORDERS)
    run(
        conn,
        "EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'orders', "
        "@role_name = NULL",
    )
    run(conn, "ALTER TABLE dbo.orders ADD note varchar(10) NULL")
    history = rows(conn, "SELECT ddl_command FROM cdc.ddl_history")
    assert len(history) == 1
    assert "note" in history[0][0]
    procedure = rows(conn, "EXEC sys.sp_cdc_get_ddl_history @capture_instance = N'dbo_orders'")
    assert len(procedure) == 1
    run(conn, "INSERT INTO dbo.orders (order_id, amount, note) VALUES (3, 1.00, 'hi')")
    assert rows(conn, "SELECT note FROM dbo.orders") == [("hi",)]
    run(conn, "ALTER TABLE dbo.orders ALTER COLUMN note varchar(20) NULL")
    run(conn, "ALTER TABLE dbo.orders DROP COLUMN note")
    assert len(rows(conn, "SELECT ddl_command FROM cdc.ddl_history")) == 3
    assert error_of(conn, "SELECT note FROM dbo.orders")[0] == 207
    number, text = error_of(conn, "ALTER TABLE dbo.orders DROP COLUMN nothing")
    assert (number, "'nothing'" in text) == (4924, True)


def test_truncate_of_a_cdc_table_fails_with_4711_and_of_another_table_empties_it(conn: Any) -> None:
    """TRUNCATE TABLE is refused on a table enabled for CDC (error 4711,
    https://learn.microsoft.com/en-us/sql/relational-databases/errors-events/database-engine-events-and-errors-4000-to-4999);
    elsewhere it removes every row
    (https://learn.microsoft.com/en-us/sql/t-sql/statements/truncate-table-transact-sql)."""
    run(conn, ORDERS)
    run(conn, "CREATE TABLE dbo.scratch (id int NOT NULL PRIMARY KEY)")
    run(conn, "INSERT INTO dbo.scratch VALUES (1), (2)")
    run(conn, "INSERT INTO dbo.orders VALUES (1, N'new', 1.00)")
    run(conn, "EXEC sys.sp_cdc_enable_table N'dbo', N'orders', NULL")
    number, text = error_of(conn, "TRUNCATE TABLE dbo.orders")
    assert number == 4711
    assert text.startswith(
        "Cannot truncate table 'orders' because it is published for replication or enabled for "
        "Change Data Capture."
    )
    assert rows(conn, "SELECT COUNT(*) FROM dbo.orders") == [(1,)]
    run(conn, "TRUNCATE TABLE dbo.scratch")
    assert rows(conn, "SELECT COUNT(*) FROM dbo.scratch") == [(0,)]
    assert error_of(conn, "TRUNCATE TABLE dbo.nothing")[0] == 4701


def test_dropping_a_captured_table_drops_its_capture_instance(conn: Any) -> None:
    """Dropping a CDC-enabled table removes its change data capture metadata
    (https://learn.microsoft.com/en-us/sql/relational-databases/track-changes/about-change-data-capture-sql-server);
    DROP TABLE of a missing table is 3701 unless IF EXISTS
    (https://learn.microsoft.com/en-us/sql/t-sql/statements/drop-table-transact-sql)."""
    run(conn, ORDERS)
    run(conn, "EXEC sys.sp_cdc_enable_table N'dbo', N'orders', NULL")
    assert rows(conn, "SELECT capture_instance FROM cdc.change_tables") == [("dbo_orders",)]
    run(conn, "DROP TABLE dbo.orders")
    assert rows(conn, "SELECT capture_instance FROM cdc.change_tables") == []
    assert error_of(conn, "SELECT * FROM dbo.orders")[0] == 208
    assert error_of(conn, "DROP TABLE dbo.orders")[0] == 3701
    run(conn, "DROP TABLE IF EXISTS dbo.orders")
    run(conn, ORDERS)  # the name is free again
    assert rows(conn, "SELECT COUNT(*) FROM dbo.orders") == [(0,)]


def test_enable_table_refuses_net_changes_on_a_table_without_a_key_with_22939(
    emulator: Emulator, conn: Any
) -> None:
    """22939, and the same table without net changes is enabled (ERRORS_22000;
    https://learn.microsoft.com/en-us/sql/relational-databases/system-stored-procedures/sys-sp-cdc-enable-table-transact-sql)."""
    emulator.create_table("dbo.heap", {"a": "int", "b": "int"})
    number, text = error_of(
        conn,
        "EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'heap', "
        "@role_name = NULL, @supports_net_changes = 1",
    )
    assert number == 22939
    assert text.startswith(
        "The parameter @supports_net_changes is set to 1, but the source table does not have a "
        "primary key defined and no alternate unique index has been specified."
    )
    assert rows(conn, "SELECT COUNT(*) FROM cdc.change_tables") == [(0,)]
    run(conn, "EXEC sys.sp_cdc_enable_table N'dbo', N'heap', NULL, @supports_net_changes = 0")
    assert rows(conn, "SELECT capture_instance FROM cdc.change_tables") == [("dbo_heap",)]


def test_enable_table_checks_the_index_name_it_is_given(conn: Any) -> None:
    """22928 for a name that is no index of the table, 22929 for an index that is not unique
    (ERRORS_22000); the primary key's index is accepted."""
    run(conn, ORDERS)
    run(conn, "CREATE INDEX ix_status ON dbo.orders (status)")
    enable = "EXEC sys.sp_cdc_enable_table N'dbo', N'orders', NULL, @index_name = N'{}'"
    number, text = error_of(conn, enable.format("ix_nothing"))
    assert number == 22928
    assert text.startswith("Index name 'ix_nothing' is not an index for table 'dbo.orders'.")
    number, text = error_of(conn, enable.format("ix_status"))
    assert number == 22929
    assert text.startswith("Index 'ix_status' must be either a primary key or a unique index")
    assert error_of(conn, "CREATE INDEX ix_status ON dbo.orders (amount)")[0] == 1913
    assert error_of(conn, "CREATE UNIQUE INDEX ix_bad ON dbo.orders (nothing)")[0] == 1911
    run(conn, enable.format("PK_orders"))
    assert rows(conn, "SELECT capture_instance FROM cdc.change_tables") == [("dbo_orders",)]


def orders_by_api(emulator: Emulator) -> None:
    emulator.create_table(
        "dbo.orders",
        {"order_id": "int", "status": "nvarchar(20) NULL", "amount": "decimal(10,2) NOT NULL"},
        primary_key="order_id",
    )


def test_enable_table_checks_the_captured_column_list(emulator: Emulator, conn: Any) -> None:
    """22930 for a name that is no column of the table; 22943 for a list without the key
    columns (ERRORS_22000)."""
    orders_by_api(emulator)
    enable = "EXEC sys.sp_cdc_enable_table N'dbo', N'orders', NULL, @captured_column_list = N'{}'"
    number, text = error_of(conn, enable.format("order_id, nothing"))
    assert number == 22930
    assert text.startswith("Could not locate 'nothing' as a column of source table 'dbo.orders'.")
    number, text = error_of(conn, enable.format("status, amount"))
    assert number == 22943
    assert text.startswith(
        "Columns used to uniquely identify a row for net change tracking must be included in the "
        "list of captured columns."
    )
    run(conn, enable.format("order_id, [status]"))
    captured = rows(conn, "SELECT column_name FROM cdc.captured_columns ORDER BY column_ordinal")
    assert captured == [("order_id",), ("status",)]


def test_insert_values_computes_expressions_and_keeps_seven_fraction_digits(
    emulator: Emulator, conn: Any
) -> None:
    """A VALUES list takes expressions (https://learn.microsoft.com/en-us/sql/t-sql/queries/
    table-value-constructor-transact-sql), and datetime2(7) keeps 100 ns: seven fractional
    digits (https://learn.microsoft.com/en-us/sql/t-sql/data-types/datetime2-transact-sql)."""
    emulator.create_table(
        "dbo.events", {"id": "int", "at": "datetime2(7) NOT NULL", "qty": "int"}, primary_key="id"
    )
    run(
        conn,
        "INSERT INTO dbo.events (id, at, qty) VALUES "
        "(1, '2026-09-28T21:00:00.1234567', 2 + 3), "
        "(2, CAST('2026-09-28T21:00:00.7654321' AS datetime2(7)), CAST('7' AS int))",
    )
    stored = rows(conn, "SELECT id, CONVERT(varchar(27), at, 126), qty FROM dbo.events ORDER BY id")
    assert stored == [
        (1, "2026-09-28T21:00:00.1234567", 5),
        (2, "2026-09-28T21:00:00.7654321", 7),
    ]
    run(conn, "UPDATE dbo.events SET qty = 10 * 2 WHERE id = 1")
    assert rows(conn, "SELECT qty FROM dbo.events WHERE id = 1") == [(20,)]


def test_the_update_mask_functions_tell_which_captured_columns_an_update_changed(
    emulator: Emulator, conn: Any
) -> None:
    """sys.fn_cdc_get_column_ordinal gives the column's ordinal in the change table (as
    cdc.captured_columns.column_ordinal), sys.fn_cdc_is_bit_set and sys.fn_cdc_has_column_changed
    read that column's bit of __$update_mask
    (https://learn.microsoft.com/en-us/sql/relational-databases/system-functions/sys-fn-cdc-get-column-ordinal-transact-sql,
    https://learn.microsoft.com/en-us/sql/relational-databases/system-functions/sys-fn-cdc-is-bit-set-transact-sql,
    https://learn.microsoft.com/en-us/sql/relational-databases/system-functions/sys-fn-cdc-has-column-changed-transact-sql)."""
    orders_by_api(emulator)
    run(conn, "EXEC sys.sp_cdc_enable_table N'dbo', N'orders', NULL")
    run(conn, "INSERT INTO dbo.orders VALUES (1, N'new', 1.00)")
    run(conn, "UPDATE dbo.orders SET amount = 2.00 WHERE order_id = 1")
    ordinals = rows(
        conn,
        "SELECT sys.fn_cdc_get_column_ordinal('dbo_orders', 'order_id'), "
        "sys.fn_cdc_get_column_ordinal('dbo_orders', 'status'), "
        "sys.fn_cdc_get_column_ordinal('dbo_orders', 'amount')",
    )
    assert ordinals == [(1, 2, 3)]
    changed = rows(
        conn,
        "DECLARE @from binary(10) = sys.fn_cdc_get_min_lsn('dbo_orders'), "
        "@to binary(10) = sys.fn_cdc_get_max_lsn(); "
        "SELECT __$operation, "
        "sys.fn_cdc_is_bit_set(sys.fn_cdc_get_column_ordinal('dbo_orders', 'status'), "
        "__$update_mask), "
        "sys.fn_cdc_is_bit_set(sys.fn_cdc_get_column_ordinal('dbo_orders', 'amount'), "
        "__$update_mask), "
        "sys.fn_cdc_has_column_changed('dbo_orders', 'status', __$update_mask), "
        "sys.fn_cdc_has_column_changed('dbo_orders', 'amount', __$update_mask) "
        "FROM cdc.fn_cdc_get_all_changes_dbo_orders(@from, @to, N'all') ORDER BY __$start_lsn",
    )
    # The insert sets every captured column's bit; the update only the changed column's.
    assert changed == [(2, True, True, True, True), (4, False, True, False, True)]
    # Ordinal 9 is the lowest bit of the second byte from the end.
    assert rows(
        conn, "SELECT sys.fn_cdc_is_bit_set(9, 0x0100), sys.fn_cdc_is_bit_set(1, 0x0100)"
    ) == [(True, False)]


def test_a_batch_creates_a_table_if_missing_and_fills_it_without_semicolons(conn: Any) -> None:
    """CREATE TABLE ends at its column list; a statement may follow it without a semicolon,
    and IF OBJECT_ID(...) IS NULL guards it
    (https://learn.microsoft.com/en-us/sql/t-sql/language-elements/if-else-transact-sql)."""
    batch = (
        "IF OBJECT_ID(N'dbo.notes', N'U') IS NULL\n"
        "CREATE TABLE dbo.notes (id int NOT NULL PRIMARY KEY, body nvarchar(20)) ON [PRIMARY]\n"
        "INSERT INTO dbo.notes VALUES (1, N'a')\n"
    )
    run(conn, batch)
    run(conn, batch.replace("(1, N'a')", "(2, N'b')"))  # the IF skips the CREATE
    assert rows(conn, "SELECT id, body FROM dbo.notes ORDER BY id") == [(1, "a"), (2, "b")]
