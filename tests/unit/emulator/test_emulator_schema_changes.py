"""NULL / NOT NULL changes and sp_rename as SQL Server's capture sees them (docs/emulator.md,
decisions 1260 and 1261). The expected texts are SQL Server's messages 515 and 4928."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pymssql
import pytest

from mssql_cdc.emulator import ConstraintError, Emulator, SchemaError, UnknownObjectError
from tests.unit.emulator.test_tds_drivers import server_error
from tests.unit.support.emulator_oracle import at
from tests.unit.support.tds_clients import connect

NOT_NULL_INSERT = (
    "Cannot insert the value NULL into column 'note', table 'shop.dbo.orders'; "
    "column does not allow nulls. INSERT fails."
)


@pytest.fixture
def emu(tmp_path: Path) -> Iterator[Emulator]:
    emulator = Emulator.create(tmp_path / "shop.db", start="2026-09-28T13:50:00")
    emulator.create_table(
        "dbo.orders",
        {"order_id": "int", "note": "nvarchar(20) NOT NULL", "qty": "int NULL"},
        primary_key="order_id",
    )
    emulator.enable_cdc("dbo.orders", captured_columns=["order_id", "note"])
    yield emulator
    emulator.close()


def nullability(emu: Emulator, table: str) -> dict[str, bool]:
    return {c["name"]: c["is_nullable"] for c in emu.reader().table_info(table)["columns"]}


def test_the_reader_tells_which_columns_allow_nulls(emu: Emulator) -> None:
    assert nullability(emu, "dbo.orders") == {"order_id": False, "note": False, "qty": True}


def test_an_insert_without_a_not_null_column_is_error_515_and_writes_nothing(
    emu: Emulator,
) -> None:
    with pytest.raises(ConstraintError) as caught:
        emu.commit([("insert", "dbo.orders", {"order_id": 1, "qty": 2})], at=at(1))
    assert caught.value.number == 515
    assert NOT_NULL_INSERT in str(caught.value)
    assert emu.rows("dbo.orders") == []


def test_altering_to_not_null_over_a_stored_null_is_error_515_and_changes_nothing(
    emu: Emulator,
) -> None:
    emu.commit([("insert", "dbo.orders", {"order_id": 1, "note": "a"})], at=at(1))
    with pytest.raises(ConstraintError) as caught:
        emu.alter_column("dbo.orders", "qty", "int NOT NULL", at=at(2))
    assert caught.value.number == 515
    assert "column does not allow nulls. UPDATE fails." in str(caught.value)
    assert nullability(emu, "dbo.orders")["qty"] is True
    assert emu.reader().ddl_history("dbo_orders") == []


def test_an_alter_without_null_or_not_null_leaves_the_column_nullable(emu: Emulator) -> None:
    emu.alter_column("dbo.orders", "note", "nvarchar(30)", at=at(1))
    emu.commit([("insert", "dbo.orders", {"order_id": 1})], at=at(2))
    assert nullability(emu, "dbo.orders")["note"] is True
    assert emu.rows("dbo.orders") == [{"order_id": 1, "note": None, "qty": None}]


def test_a_nullability_change_is_in_the_ddl_history_without_a_change_table_update(
    emu: Emulator,
) -> None:
    emu.alter_column("dbo.orders", "note", "nvarchar(20) NULL", at=at(1))
    [entry] = emu.reader().ddl_history("dbo_orders")
    assert entry["ddl_command"] == (
        "ALTER TABLE [dbo].[orders] ALTER COLUMN [note] nvarchar(20) NULL"
    )
    assert entry["required_column_update"] is False


def test_a_captured_column_cannot_be_renamed(emu: Emulator) -> None:
    with pytest.raises(SchemaError) as caught:
        emu.rename_column("dbo.orders", "note", "remark")
    assert caught.value.number == 4928
    assert "Cannot alter column 'note' because it is 'REPLICATED'" in str(caught.value)
    assert list(nullability(emu, "dbo.orders")) == ["order_id", "note", "qty"]


def test_an_uncaptured_column_renames_and_capture_carries_on(emu: Emulator) -> None:
    emu.commit([("insert", "dbo.orders", {"order_id": 1, "note": "a", "qty": 1})], at=at(1))
    emu.rename_column("dbo.orders", "qty", "quantity")
    emu.commit([("insert", "dbo.orders", {"order_id": 2, "note": "b", "quantity": 2})], at=at(2))
    assert [r["quantity"] for r in emu.rows("dbo.orders")] == [1, 2]
    assert [r["note"] for r in emu.change_rows("dbo_orders")] == ["a", "b"]
    assert emu.reader().ddl_history("dbo_orders") == []


def test_a_renamed_table_keeps_its_capture_instance(emu: Emulator) -> None:
    emu.commit([("insert", "dbo.orders", {"order_id": 1, "note": "a"})], at=at(1))
    emu.rename_table("dbo.orders", "purchases")
    emu.commit([("insert", "dbo.purchases", {"order_id": 2, "note": "b"})], at=at(2))
    assert emu.capture_instances("dbo.purchases") == ["dbo_orders"]
    assert [r["order_id"] for r in emu.change_rows("dbo_orders")] == [1, 2]
    with pytest.raises(UnknownObjectError):
        emu.rows("dbo.orders")


def test_over_tds_sys_columns_and_error_515_tell_the_truth(emu: Emulator) -> None:
    with emu.serve() as server:
        conn = connect(server, "pymssql")
        try:
            cursor = conn.cursor()
            cursor.execute(
                "SELECT c.name, c.is_nullable FROM sys.columns AS c "
                "WHERE c.object_id = OBJECT_ID('dbo.orders') ORDER BY c.column_id"
            )
            catalog = cursor.fetchall()
            with pytest.raises(pymssql.Error) as caught:
                cursor.execute("INSERT INTO dbo.orders (order_id, qty) VALUES (1, 2)")
        finally:
            conn.close()
    assert catalog == [("order_id", False), ("note", False), ("qty", True)]
    assert server_error(caught.value)[0] == 515
    assert server_error(caught.value)[1].startswith(NOT_NULL_INSERT)


def test_over_tds_sp_rename_refuses_a_captured_column_and_renames_the_rest(
    emu: Emulator,
) -> None:
    with emu.serve() as server:
        conn = connect(server, "pymssql")
        try:
            cursor = conn.cursor()
            with pytest.raises(pymssql.Error) as caught:
                cursor.execute("EXEC sp_rename 'dbo.orders.note', 'remark', 'COLUMN'")
            cursor.execute("EXEC sys.sp_rename 'dbo.orders.qty', 'quantity', 'COLUMN'")
            cursor.execute("EXEC sp_rename '[dbo].[orders]', 'purchases'")
            conn.commit()
        finally:
            conn.close()
    assert server_error(caught.value)[0] == 4928
    assert server_error(caught.value)[1].startswith(
        "Cannot alter column 'note' because it is 'REPLICATED'."
    )
    assert list(nullability(emu, "dbo.purchases")) == ["order_id", "note", "quantity"]
    assert emu.capture_instances("dbo.purchases") == ["dbo_orders"]
