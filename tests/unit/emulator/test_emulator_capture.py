"""Capture modes, idle entries, capture instances and DDL (spec 40, sections 3.4 and 3.6)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mssql_cdc.emulator import (
    CaptureError,
    CaptureInstanceLimitError,
    ConstraintError,
    Emulator,
    SchemaError,
    UnknownObjectError,
)
from tests.unit.support.emulator_oracle import at, dump, orders


def test_behaviour_4_an_idle_entry_advances_max_lsn_without_change_rows(tmp_path: Path) -> None:
    emu = orders(tmp_path / "e.db")
    c = emu.commit([("insert", "dbo.orders", {"order_id": 1})], at=at(1))
    idle = emu.idle(at=at(2))
    assert idle > c
    assert emu.max_lsn() == idle
    assert emu.reader().max_commit_lsn() == c
    assert len(emu.change_rows("dbo_orders")) == 1
    entry = emu.lsn_time_mapping()[-1]
    assert entry["tran_id"] == bytes(10)
    assert entry["tran_begin_lsn"] == idle


def test_behaviour_6_manual_capture_runs_bounded_atomic_cycles(tmp_path: Path) -> None:
    emu = orders(tmp_path / "e.db", capture="manual")
    emu.configure(maxtrans=2)
    lsns = [emu.commit([("insert", "dbo.orders", {"order_id": i})], at=at(i)) for i in range(5)]
    assert emu.rows("dbo.orders") != []  # the source changes at once
    assert emu.max_lsn() is None  # nothing captured yet
    assert emu.pending_capture() == 5
    assert emu.capture() == lsns[1]
    assert emu.capture() == lsns[3]
    assert emu.drain() == lsns[4]
    assert emu.pending_capture() == 0
    assert [r["__$start_lsn"] for r in emu.change_rows("dbo_orders")] == lsns


def test_manual_idle_entries_wait_in_the_log_so_max_lsn_never_jumps_a_commit(
    tmp_path: Path,
) -> None:
    emu = orders(tmp_path / "e.db", capture="manual")
    emu.configure(maxtrans=1)
    c = emu.commit([("insert", "dbo.orders", {"order_id": 1})], at=at(1))
    emu.idle(at=at(2))
    assert emu.capture() == c


def test_an_empty_manual_cycle_writes_an_idle_entry_only_as_the_interval_allows(
    tmp_path: Path,
) -> None:
    emu = orders(tmp_path / "e.db", capture="manual")
    assert emu.capture() is None
    emu.configure(idle_interval_seconds=1)
    first = emu.capture()
    assert first is not None
    assert emu.lsn_time_mapping()[-1]["tran_id"] == bytes(10)


def test_switching_to_immediate_drains_the_log(tmp_path: Path) -> None:
    emu = orders(tmp_path / "e.db", capture="manual")
    c = emu.commit([("insert", "dbo.orders", {"order_id": 1})], at=at(1))
    emu.configure(capture="immediate")
    assert emu.max_lsn() == c
    assert emu.capture() == c


def test_behaviour_14_a_second_instance_starts_later_and_both_fill_afterwards(
    tmp_path: Path,
) -> None:
    emu = orders(tmp_path / "e.db")
    first = emu.commit([("insert", "dbo.orders", {"order_id": 1})], at=at(1))
    emu.create_table("dbo.other", {"id": "int"}, primary_key="id")
    v2 = emu.enable_cdc(
        "dbo.orders", capture_instance="dbo_orders_v2", captured_columns=["order_id"]
    )
    second = emu.commit([("insert", "dbo.orders", {"order_id": 2})], at=at(2))
    assert emu.capture_instances("dbo.orders") == ["dbo_orders", "dbo_orders_v2"]
    assert [r["__$start_lsn"] for r in emu.change_rows("dbo_orders")] == [first, second]
    assert [r["__$start_lsn"] for r in emu.change_rows(v2)] == [second]
    assert list(emu.change_rows(v2)[0]) == [
        "__$start_lsn", "__$end_lsn", "__$seqval", "__$operation", "__$update_mask",
        "order_id", "__$command_id",
    ]  # fmt: skip
    info = emu.reader().capture_instances("dbo.orders")
    assert info[1]["create_lsn"] > first
    before = dump(emu.path)
    with pytest.raises(CaptureInstanceLimitError, match="already has two capture instances"):
        emu.enable_cdc("dbo.orders", capture_instance="third")
    assert dump(emu.path) == before
    with pytest.raises(SchemaError, match="already used"):
        emu.enable_cdc("dbo.other", capture_instance="dbo_orders")
    with pytest.raises(UnknownObjectError):
        emu.enable_cdc("dbo.nope")
    with pytest.raises(SchemaError, match="key column"):
        emu.enable_cdc("dbo.other", captured_columns=[])


def test_behaviour_15_ddl_does_not_reshape_an_instance_and_history_appears_on_capture(
    tmp_path: Path,
) -> None:
    emu = orders(tmp_path / "e.db", capture="manual")
    emu.commit([("insert", "dbo.orders", {"order_id": 1, "status": "a"})], at=at(1))
    ddl = emu.add_column("dbo.orders", "note", "nvarchar(40)", at=at(2))
    emu.commit([("insert", "dbo.orders", {"order_id": 2, "note": "hi"})], at=at(3))
    assert emu.ddl_history("dbo_orders") == []
    emu.drain()
    (entry,) = emu.ddl_history("dbo_orders")
    assert entry["ddl_lsn"] == ddl
    assert entry["ddl_command"] == "ALTER TABLE [dbo].[orders] ADD [note] nvarchar(40)"
    assert (entry["kind"], entry["column"], entry["new_type"]) == ("add", "note", "nvarchar(40)")
    assert "note" not in emu.change_rows("dbo_orders")[-1]
    assert emu.rows("dbo.orders")[1]["note"] == "hi"


def test_a_dropped_captured_column_reads_null_and_is_marked_not_present(tmp_path: Path) -> None:
    emu = orders(tmp_path / "e.db")
    emu.commit([("insert", "dbo.orders", {"order_id": 1, "status": "a"})], at=at(1))
    emu.drop_column("dbo.orders", "status", at=at(2))
    emu.commit([("insert", "dbo.orders", {"order_id": 2})], at=at(3))
    assert [r["status"] for r in emu.change_rows("dbo_orders")] == ["a", None]
    present = {c["name"]: c["present"] for c in emu.captured_columns("dbo_orders")}
    assert present == {"order_id": True, "status": False, "amount": True}
    assert "status" not in emu.rows("dbo.orders")[0]
    with pytest.raises(SchemaError, match="primary key"):
        emu.drop_column("dbo.orders", "order_id")


def test_alter_column_converts_stored_change_rows_and_refuses_values_that_do_not_fit(
    tmp_path: Path,
) -> None:
    path = tmp_path / "e.db"
    emu = orders(path)
    emu.commit([("insert", "dbo.orders", {"order_id": 1, "amount": "12.345"})], at=at(1))
    emu.alter_column("dbo.orders", "amount", "decimal(18,3)", at=at(2))
    (col,) = [c for c in emu.captured_columns("dbo_orders") if c["name"] == "amount"]
    assert col["sql_type"] == "decimal(18,3)"
    assert str(emu.change_rows("dbo_orders")[0]["amount"]) == "12.350"
    assert emu.ddl_history("dbo_orders")[0]["required_column_update"] is True
    with pytest.raises(ConstraintError, match="8115"):
        emu.alter_column("dbo.orders", "amount", "decimal(2,1)", at=at(3))
    with pytest.raises(SchemaError, match="within a type family"):
        emu.alter_column("dbo.orders", "amount", "date", at=at(3))


def test_alter_column_converts_across_type_families_as_sql_server_does(tmp_path: Path) -> None:
    emu = Emulator.create(tmp_path / "e.db")
    columns = {"id": "int", "n": "int", "code": "varchar(10)", "word": "varchar(10)"}
    emu.create_table("dbo.t", columns, primary_key="id")
    emu.enable_cdc("dbo.t")
    emu.commit([("insert", "dbo.t", {"id": 1, "n": 42, "code": " 7 ", "word": "abc"})], at=at(1))
    emu.commit([("insert", "dbo.t", {"id": 2, "n": -5, "code": "8", "word": "x"})], at=at(2))
    emu.alter_column("dbo.t", "n", "varchar(30)", at=at(3))  # int to varchar is legal
    assert [r["n"] for r in emu.rows("dbo.t")] == ["42", "-5"]
    assert [r["n"] for r in emu.change_rows("dbo_t")] == ["42", "-5"]
    refused = r"^Conversion failed when converting the varchar value 'abc' to data type int\."
    with pytest.raises(ConstraintError, match=refused) as failed:
        emu.alter_column("dbo.t", "word", "int", at=at(4))
    assert failed.value.number == 245
    assert [r["word"] for r in emu.rows("dbo.t")] == ["abc", "x"]  # a failed ALTER changes nothing
    emu.alter_column("dbo.t", "code", "bigint", at=at(5))  # spaces around digits are allowed
    assert [r["code"] for r in emu.rows("dbo.t")] == [7, 8]
    assert [r["code"] for r in emu.change_rows("dbo_t")] == [7, 8]
    emu.commit([("insert", "dbo.t", {"id": 3, "n": "99999999999999999999"})], at=at(6))
    with pytest.raises(ConstraintError, match="overflowed a bigint column") as overflow:
        emu.alter_column("dbo.t", "n", "bigint", at=at(7))
    assert overflow.value.number == 248


def test_alter_column_fails_capture_when_a_stored_change_row_does_not_fit(
    tmp_path: Path,
) -> None:
    emu = orders(tmp_path / "e.db", capture="manual")
    emu.commit([("insert", "dbo.orders", {"order_id": 1, "status": "long value"})], at=at(1))
    emu.commit([("update", "dbo.orders", {"order_id": 1, "status": "x"})], at=at(2))
    emu.drain()
    emu.alter_column("dbo.orders", "status", "nvarchar(3)", at=at(3))
    with pytest.raises(CaptureError, match="disable the instance"):
        emu.capture()
    with pytest.raises(CaptureError):
        emu.capture()  # every cycle fails at that record until the instance is disabled
    emu.disable_cdc("dbo_orders")
    assert emu.drain() is not None


def test_behaviour_22_the_old_shape_has_no_command_id(tmp_path: Path) -> None:
    emu = Emulator.create(tmp_path / "e.db")
    emu.configure(command_id_column=False)
    emu.create_table("dbo.t", {"id": "int"}, primary_key="id")
    emu.enable_cdc("dbo.t")
    emu.commit([("insert", "dbo.t", {"id": 1})], at=at(1))
    assert "__$command_id" not in emu.change_rows("dbo_t")[0]
    reader = emu.reader()
    lo, hi = reader.min_lsn("dbo_t"), reader.max_lsn()
    with pytest.raises(UnknownObjectError, match="include_command_id=False"):
        reader.read_changes("dbo_t", lo, hi)
    t = reader.read_changes("dbo_t", lo, hi, include_command_id=False).read_all()
    assert "_command_id" not in t.schema.names


def test_behaviour_16_lob_columns_are_null_in_old_images(tmp_path: Path) -> None:
    emu = Emulator.create(tmp_path / "e.db")
    emu.create_table(
        "dbo.docs",
        {"id": "int", "body": "nvarchar(max)", "old": "ntext", "tag": "int", "rv": "rowversion"},
        primary_key="id",
    )
    emu.enable_cdc("dbo.docs")
    emu.commit([("insert", "dbo.docs", {"id": 1, "body": "b", "old": "o"})], at=at(1))
    emu.commit([("update", "dbo.docs", {"id": 1, "tag": 2})], at=at(2))
    emu.commit([("delete", "dbo.docs", {"id": 1})], at=at(3))
    ins, before, after, deleted = emu.change_rows("dbo_docs")
    assert (before["body"], before["old"]) == (None, None)  # (max) not set, old LOB: NULL in 3
    assert (after["body"], after["old"]) == ("b", "o")
    assert (deleted["body"], deleted["old"]) == ("b", None)  # 1 keeps (max), not old LOBs
    assert isinstance(ins["rv"], bytes)
    assert len(ins["rv"]) == 8
    assert after["rv"] > ins["rv"]
    with pytest.raises(ConstraintError, match="273"):
        emu.commit([("insert", "dbo.docs", {"id": 2, "rv": b"12345678"})], at=at(4))
    emu.configure(max_text_repl_size=4)
    with pytest.raises(ConstraintError, match="7139"):
        emu.commit([("insert", "dbo.docs", {"id": 3, "body": "too long"})], at=at(5))


def test_two_emulator_objects_on_one_file_see_each_others_schema_and_settings(
    tmp_path: Path,
) -> None:
    path = tmp_path / "e.db"
    first = orders(path)
    first.commit([("insert", "dbo.orders", {"order_id": 1})], at=at(1))
    second = Emulator.open(path)
    second.add_column("dbo.orders", "note", "nvarchar(10)", at=at(2))
    first.commit([("insert", "dbo.orders", {"order_id": 2, "note": "hi"})], at=at(3))
    second.configure(capture="manual")
    first.commit([("insert", "dbo.orders", {"order_id": 3})], at=at(4))
    assert first.pending_capture() == 1
    second.disable_cdc("dbo_orders")
    first.drain()
    assert [r["note"] for r in first.rows("dbo.orders")] == [None, "hi", None]
    assert first.capture_instances("dbo.orders") == []


def test_in_immediate_mode_an_alter_that_capture_cannot_apply_raises_and_changes_nothing(
    tmp_path: Path,
) -> None:
    emu = orders(tmp_path / "e.db")
    emu.commit([("insert", "dbo.orders", {"order_id": 1, "status": "long value"})], at=at(1))
    emu.commit([("update", "dbo.orders", {"order_id": 1, "status": "x"})], at=at(2))
    before = dump(emu.path)
    with pytest.raises(CaptureError, match="dbo_orders"):
        emu.alter_column("dbo.orders", "status", "nvarchar(3)", at=at(3))
    assert dump(emu.path) == before
