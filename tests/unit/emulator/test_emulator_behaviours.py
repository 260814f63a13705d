"""The behaviours a naive simulator gets wrong (spec 40, section 10), one test each, as a reader
sees them. Rows 4, 6, 8, 14, 15, 16, 20 and 22 have their tests beside the feature they belong
to (test_emulator_capture, test_emulator_transactions, test_emulator_cleanup)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mssql_cdc.emulator import Emulator, InvalidRangeError, UnknownObjectError
from tests.unit.support.emulator_oracle import at, orders

ZERO = "0x" + "0" * 20


def test_behaviour_01_min_lsn_zeros_for_unknown_none_for_new_and_max_lsn_none_when_empty(
    tmp_path: Path,
) -> None:
    emu = orders(tmp_path / "e.db")
    reader = emu.reader()
    assert reader.max_lsn() is None
    assert reader.min_lsn("dbo_orders") is None
    assert reader.min_lsn("no_such_instance") == ZERO


def test_behaviour_02_bad_ranges_raise_313_and_a_dropped_instance_208(tmp_path: Path) -> None:
    emu = orders(tmp_path / "e.db")
    c = emu.commit([("insert", "dbo.orders", {"order_id": 1})], at=at(1))
    reader = emu.reader()
    with pytest.raises(InvalidRangeError):
        reader.read_changes("dbo_orders", c, reader.increment_lsn(c))
    emu.disable_cdc("dbo_orders")
    with pytest.raises(UnknownObjectError) as caught:
        reader.read_changes("dbo_orders", c, c)
    assert caught.value.number == 208


def test_behaviour_03_ranges_are_closed_and_increment_is_plus_one(tmp_path: Path) -> None:
    emu = orders(tmp_path / "e.db")
    c = emu.commit([("insert", "dbo.orders", {"order_id": 1})], at=at(1))
    reader = emu.reader()
    assert reader.read_changes("dbo_orders", c, c).read_all().num_rows == 1
    assert reader.increment_lsn("0x0000002700000020FFFF") == "0x00000027000000210000"
    assert reader.decrement_lsn(reader.increment_lsn(c)) == c
    assert reader.lsn_to_time(reader.increment_lsn(c)) is None  # an increment is rarely an entry


def test_behaviour_05_one_max_lsn_for_the_database_and_ranges_without_rows(tmp_path: Path) -> None:
    emu = orders(tmp_path / "e.db")
    emu.create_table("dbo.other", {"id": "int"}, primary_key="id")
    emu.enable_cdc("dbo.other")
    first = emu.commit([("insert", "dbo.orders", {"order_id": 1})], at=at(1))
    other = emu.commit([("insert", "dbo.other", {"id": 1})], at=at(2))
    reader = emu.reader()
    assert reader.max_lsn() == other
    rows = reader.read_changes("dbo_orders", reader.increment_lsn(first), other).read_all()
    assert rows.num_rows == 0


def test_behaviour_07_update_is_3_then_4_and_a_key_update_1_then_2(tmp_path: Path) -> None:
    emu = orders(tmp_path / "e.db")
    emu.commit([("insert", "dbo.orders", {"order_id": 1})], at=at(1))
    emu.commit([("update", "dbo.orders", {"order_id": 1, "status": "x"})], at=at(2))
    emu.commit([("update", "dbo.orders", {"order_id": 2}, {"order_id": 1})], at=at(3))
    assert [r["__$operation"] for r in emu.change_rows("dbo_orders")] == [2, 3, 4, 1, 2]


def test_behaviour_10_cleanup_moves_the_mark_first_and_rows_at_it_survive(tmp_path: Path) -> None:
    emu = orders(tmp_path / "e.db")
    lsns = [emu.commit([("insert", "dbo.orders", {"order_id": i})], at=at(i)) for i in range(3)]
    emu.cleanup("dbo_orders", lsns[1])
    assert [r["__$start_lsn"] for r in emu.change_rows("dbo_orders")] == lsns[1:]


def test_behaviour_11_cleanup_races_a_read_that_checked_min_lsn_first(tmp_path: Path) -> None:
    emu = orders(tmp_path / "e.db")
    lsns = [emu.commit([("insert", "dbo.orders", {"order_id": i})], at=at(i)) for i in range(3)]
    reader = emu.reader()
    lo = reader.min_lsn("dbo_orders")
    emu.cleanup_before_read("dbo_orders", lsns[2])
    with pytest.raises(InvalidRangeError):
        reader.read_changes("dbo_orders", lo, lsns[2])


def test_behaviour_12_equal_commit_times_tie_to_the_smallest_lsn_in_cleanup(
    tmp_path: Path,
) -> None:
    emu = orders(tmp_path / "e.db")
    lsns = [emu.commit([("insert", "dbo.orders", {"order_id": i})], at=at(5)) for i in range(3)]
    emu.run_cleanup_job(retention_minutes=1)  # nothing is older than a minute
    assert emu.min_lsn("dbo_orders") < lsns[0]
    emu.cleanup("dbo_orders", lsns[2])
    assert emu.min_lsn("dbo_orders") == lsns[0]
    reader = emu.reader()
    assert reader.time_to_lsn("largest less than or equal", at(5)) == lsns[2]
    assert reader.time_to_lsn("smallest greater than or equal", at(5)) == lsns[0]


def test_behaviour_13_commit_times_have_datetime_precision(tmp_path: Path) -> None:
    emu = orders(tmp_path / "e.db")
    lsn = emu.commit([("insert", "dbo.orders", {"order_id": 1})], at=at(1.0049))
    time = emu.lsn_time(lsn)
    assert time is not None
    assert time.microsecond == 3_000


def test_behaviour_18_the_row_filter_is_trimmed_and_case_insensitive_inner_spaces_exact(
    tmp_path: Path,
) -> None:
    emu = orders(tmp_path / "e.db")
    c = emu.commit([("insert", "dbo.orders", {"order_id": 1})], at=at(1))
    reader = emu.reader()
    rows = reader.read_changes("dbo_orders", c, c, row_filter=" ALL UPDATE OLD ").read_all()
    assert rows.num_rows == 1
    with pytest.raises(InvalidRangeError):
        reader.read_changes("dbo_orders", c, c, row_filter="all  update old")


def test_behaviour_19_lsn_arguments_pad_on_the_right_like_binary_10(tmp_path: Path) -> None:
    emu = orders(tmp_path / "e.db")
    lsns = [emu.commit([("insert", "dbo.orders", {"order_id": i})], at=at(i)) for i in range(2)]
    reader = emu.reader()
    # 0x00000027 pads to 0x00000027000000000000, below every allocated LSN
    assert reader.nth_commit_after("0x00000027", 1) == lsns[0]
    assert reader.nth_commit_after(bytes.fromhex(lsns[0][2:]), 1) == lsns[1]
    with pytest.raises(ValueError, match="not an LSN"):
        reader.nth_commit_after("0x123", 1)


def test_behaviour_21_an_all_null_row_can_come_back(tmp_path: Path) -> None:
    emu = orders(tmp_path / "e.db")
    c = emu.commit([("insert", "dbo.orders", {"order_id": 1})], at=at(1))
    emu.inject_null_row()
    rows = emu.reader().read_changes("dbo_orders", c, c).read_all().to_pylist()
    assert len(rows) == 2
    assert all(v is None for v in rows[0].values())


def test_determinism_the_same_calls_with_explicit_times_give_identical_files(
    tmp_path: Path,
) -> None:
    from tests.unit.support.emulator_oracle import dump

    dumps = []
    for name in ("a.db", "b.db"):
        emu = Emulator.create(tmp_path / name)
        emu.create_table("dbo.t", {"id": "int", "v": "nvarchar(5)"}, primary_key="id")
        emu.enable_cdc("dbo.t")
        emu.commit([("insert", "dbo.t", {"id": 1, "v": "a"})], at=at(1))
        emu.idle(at=at(2))
        emu.add_column("dbo.t", "w", "int", at=at(3))
        emu.commit([("update", "dbo.t", {"id": 1, "w": 4})], at=at(4))
        emu.close()
        dumps.append(dump(tmp_path / name))
    assert dumps[0] == dumps[1]
