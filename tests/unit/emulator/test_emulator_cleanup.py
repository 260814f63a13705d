"""Cleanup by low water mark and the time-based cleanup job (spec 40, section 3.7)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mssql_cdc.emulator import Emulator, UnknownObjectError
from tests.unit.support.emulator_oracle import at, dump, orders, raw_change_rows


def commits(emu: Emulator, seconds: list[float]) -> list[str]:
    return [
        emu.commit([("insert", "dbo.orders", {"order_id": i})], at=at(s))
        for i, s in enumerate(seconds)
    ]


def test_cleanup_deletes_rows_strictly_below_the_mark_and_keeps_rows_at_it(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    emu = orders(path)
    lsns = commits(emu, [1, 2, 3, 4])
    emu.cleanup("dbo_orders", lsns[2])
    assert [r["__$start_lsn"] for r in emu.change_rows("dbo_orders")] == lsns[2:]
    assert emu.min_lsn("dbo_orders") == lsns[2]
    assert [e["start_lsn"] for e in emu.lsn_time_mapping()] == lsns[2:]
    assert emu.lsn_time(lsns[1]) is None


def test_a_mark_that_is_not_an_entry_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    emu = orders(path)
    lsns = commits(emu, [1, 2])
    before = dump(path)
    with pytest.raises(ValueError, match="22964"):
        emu.cleanup("dbo_orders", emu.reader().increment_lsn(lsns[0]))
    with pytest.raises(UnknownObjectError):
        emu.cleanup("nope", lsns[1])
    with pytest.raises(ValueError, match="not an LSN"):
        emu.cleanup("dbo_orders", "0x123")
    assert dump(path) == before


def test_a_mark_lands_on_the_first_entry_sharing_its_commit_time(tmp_path: Path) -> None:
    emu = orders(tmp_path / "e.db")
    lsns = commits(emu, [1, 2, 2, 2, 3])
    emu.cleanup("dbo_orders", lsns[3])
    assert emu.min_lsn("dbo_orders") == lsns[1]


def test_a_lower_mark_never_lowers_the_stored_one(tmp_path: Path) -> None:
    emu = orders(tmp_path / "e.db")
    lsns = commits(emu, [1, 2, 3])
    emu.cleanup("dbo_orders", lsns[2])
    emu.cleanup("dbo_orders", lsns[0])
    assert emu.min_lsn("dbo_orders") == lsns[2]


def test_cleanup_deletes_in_batches_of_the_threshold_with_the_same_result(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    emu = orders(path)
    emu.configure(cleanup_threshold=3)
    lsns = [
        emu.commit([("insert", "dbo.orders", {"order_id": 10 * i + j}) for j in range(4)], at=at(i))
        for i in range(5)
    ]
    emu.cleanup("dbo_orders", lsns[3])
    starts = {"0x" + r["__$start_lsn"].hex().upper() for r in raw_change_rows(path, "dbo_orders")}
    assert starts == set(lsns[3:])


def test_the_job_counts_retention_from_the_newest_entry_at_or_before_the_cut(
    tmp_path: Path,
) -> None:
    emu = orders(tmp_path / "e.db")
    lsns = commits(emu, [0, 60, 120, 180, 240])
    emu.run_cleanup_job(retention_minutes=2)  # cut at 120 s: the entry at 120 s
    assert emu.min_lsn("dbo_orders") == lsns[2]
    assert len(emu.change_rows("dbo_orders")) == 3


def test_the_job_rule_after_picks_the_first_entry_past_the_cut(tmp_path: Path) -> None:
    emu = orders(tmp_path / "e.db")
    emu.configure(cleanup_job_rule="after")
    lsns = commits(emu, [0, 60, 120, 180, 240])
    emu.run_cleanup_job(retention_minutes=2)
    assert emu.min_lsn("dbo_orders") == lsns[3]


def test_the_job_uses_the_retention_setting_and_does_nothing_without_a_match(
    tmp_path: Path,
) -> None:
    emu = orders(tmp_path / "e.db", retention_minutes=10)
    lsns = commits(emu, [0, 60])
    emu.run_cleanup_job()
    assert emu.min_lsn("dbo_orders") < lsns[0]
    assert len(emu.change_rows("dbo_orders")) == 2
    with pytest.raises(ValueError, match="retention_minutes"):
        emu.run_cleanup_job(retention_minutes=0)


def test_behaviour_20_idle_entries_and_the_job_purge_a_quiet_readers_stale_position(
    tmp_path: Path,
) -> None:
    emu = orders(tmp_path / "e.db")
    old = commits(emu, [0])[0]
    for minute in range(1, 11):
        emu.idle(at=at(minute * 60))
    emu.run_cleanup_job(retention_minutes=5)
    reader = emu.reader()
    mark = reader.min_lsn("dbo_orders")
    assert mark is not None
    stale_next = reader.increment_lsn(old)
    assert stale_next < mark  # an offset left at the old commit is purged
    advanced = reader.max_lsn()
    assert advanced is not None
    assert reader.increment_lsn(advanced) >= mark  # one advanced to max_lsn is not
