"""The `_operation` values: SQL Server's documented `__$operation` codes, and 0 for snapshots."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from mssql_cdc.core.operation import Operation
from tests.unit.support.emulator_oracle import at, orders


def test_the_members_are_sql_servers_change_table_codes_and_zero_for_a_snapshot_row() -> None:
    # The oracle is SQL Server's documentation of cdc.<instance>_CT.__$operation.
    assert {op.name: op.value for op in Operation} == {
        "SNAPSHOT": 0,
        "DELETE": 1,
        "INSERT": 2,
        "UPDATE_BEFORE": 3,
        "UPDATE_AFTER": 4,
    }


def test_the_emulator_writes_each_change_with_its_code_as_a_plain_integer(tmp_path: Path) -> None:
    emu = orders(tmp_path / "e.db")
    first = emu.commit([("insert", "dbo.orders", {"order_id": 1, "status": "new"})], at=at(1))
    emu.commit([("update", "dbo.orders", {"order_id": 1, "status": "paid"})], at=at(2))
    last = emu.commit([("delete", "dbo.orders", {"order_id": 1})], at=at(3))
    changes = emu.reader().read_changes("dbo_orders", first, last).read_all()
    codes = changes.column("_operation")
    assert codes.type == pa.int32()
    assert codes.to_pylist() == [2, 3, 4, 1]
    assert [Operation(code) for code in codes.to_pylist()] == [
        Operation.INSERT,
        Operation.UPDATE_BEFORE,
        Operation.UPDATE_AFTER,
        Operation.DELETE,
    ]
