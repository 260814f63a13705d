"""Fault hooks (spec 40, section 3.8): each fires once, at its documented moment."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from mssql_cdc.emulator import Emulator, EmulatorReader, HookError, InvalidRangeError
from tests.unit.support.emulator_oracle import at, orders


def filled(path: Path, commits: int = 6) -> tuple[Emulator, list[str]]:
    emu = orders(path)
    lsns = [
        emu.commit([("insert", "dbo.orders", {"order_id": i})], at=at(i)) for i in range(commits)
    ]
    return emu, lsns


def test_cleanup_before_read_makes_a_checked_range_raise_313_once(tmp_path: Path) -> None:
    emu, lsns = filled(tmp_path / "e.db")
    reader = emu.reader()
    lo, hi = reader.min_lsn("dbo_orders"), reader.max_lsn()
    emu.cleanup_before_read("dbo_orders", lsns[3])
    assert len(emu.pending_hooks()) == 1
    with pytest.raises(InvalidRangeError, match="below min_lsn"):
        reader.read_changes("dbo_orders", lo, hi)
    assert emu.pending_hooks() == []
    assert reader.read_changes("dbo_orders", lsns[3], hi).read_all().num_rows == 3


def test_cleanup_during_read_leaves_the_rows_complete_and_moves_min_lsn(tmp_path: Path) -> None:
    emu, lsns = filled(tmp_path / "e.db")
    reader = emu.reader()
    lo, hi = reader.min_lsn("dbo_orders"), reader.max_lsn()
    emu.cleanup_during_read("dbo_orders", lsns[4])
    rows = reader.read_changes("dbo_orders", lo, hi).read_all()
    assert rows.num_rows == 6
    assert reader.min_lsn("dbo_orders") == lsns[4]


def test_cleanup_mid_read_silently_drops_later_rows_below_the_new_mark(tmp_path: Path) -> None:
    emu, lsns = filled(tmp_path / "e.db")
    reader = emu.reader()
    lo, hi = reader.min_lsn("dbo_orders"), reader.max_lsn()
    emu.cleanup_mid_read("dbo_orders", lsns[4], after_rows=2)
    got = reader.read_changes("dbo_orders", lo, hi, batch_rows=1).read_all()
    assert got.column("_start_lsn").to_pylist() == [lsns[0], lsns[1], lsns[4], lsns[5]]
    assert reader.min_lsn("dbo_orders") == lsns[4]


def test_inject_null_row_yields_one_all_null_row_first(tmp_path: Path) -> None:
    emu, _ = filled(tmp_path / "e.db", 2)
    reader = emu.reader()
    emu.inject_null_row(read="table")
    rows = reader.read_table("dbo.orders").read_all().to_pylist()
    assert rows[0] == {"order_id": None, "status": None, "amount": None}
    assert len(rows) == 3
    assert len(reader.read_table("dbo.orders").read_all()) == 2
    emu.inject_null_row()
    lo, hi = reader.min_lsn("dbo_orders"), reader.max_lsn()
    first = reader.read_changes("dbo_orders", lo, hi).read_all().to_pylist()[0]
    assert set(first.values()) == {None}


def test_commit_before_read_commits_at_the_start_of_the_next_table_read(tmp_path: Path) -> None:
    emu, _ = filled(tmp_path / "e.db", 2)
    reader = emu.reader()
    before = reader.max_lsn()
    emu.commit_before_read([("insert", "dbo.orders", {"order_id": 100})], at=at(50))
    assert reader.max_lsn() == before  # metadata calls never fire hooks
    keys = reader.read_table("dbo.orders").read_all().column("order_id").to_pylist()
    assert keys == [0, 1, 100]
    assert reader.max_lsn() != before


def test_a_hook_that_fails_when_it_fires_raises_hook_error_and_is_consumed(tmp_path: Path) -> None:
    emu, _ = filled(tmp_path / "e.db", 2)
    reader = emu.reader()
    emu.commit_before_read([("insert", "dbo.orders", {"order_id": 0})])  # duplicate key
    with pytest.raises(HookError, match="commit_before_read"):
        reader.read_table("dbo.orders")
    assert emu.pending_hooks() == []
    assert len(reader.read_table("dbo.orders").read_all()) == 2


def test_hook_arguments_are_checked_when_registered(tmp_path: Path) -> None:
    emu, lsns = filled(tmp_path / "e.db", 2)
    with pytest.raises(LookupError):
        emu.cleanup_during_read("nope", lsns[0])
    with pytest.raises(ValueError, match="read="):
        emu.inject_null_row(read="everything")  # type: ignore[arg-type]
    emu.inject_null_row()
    emu.inject_null_row(read="table")
    assert emu.clear_hooks() == 2


def _claim(path: str, queue: multiprocessing.Queue[int]) -> None:
    reader = EmulatorReader(path)
    rows = reader.read_table("dbo.orders").read_all()
    queue.put(sum(1 for v in rows.column("order_id").to_pylist() if v is None))


def test_of_four_processes_reading_at_once_exactly_one_fires_a_hook(tmp_path: Path) -> None:
    emu, _ = filled(tmp_path / "e.db", 3)
    emu.inject_null_row(read="table")
    ctx = multiprocessing.get_context("spawn")
    queue: multiprocessing.Queue[int] = ctx.Queue()
    procs = [ctx.Process(target=_claim, args=(str(emu.path), queue)) for _ in range(4)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert sorted(results) == [0, 0, 0, 1]
