"""Transactions as SQL Server's capture sees them (issue 34, item 4; decision 1336).

Microsoft's rules, the oracle here:
- Every change of a transaction carries its commit LSN in __$start_lsn, and all the changes
  committed in one transaction share it
  (https://learn.microsoft.com/en-us/sql/relational-databases/system-tables/cdc-capture-instance-ct-transact-sql).
- cdc.lsn_time_mapping has one row per transaction that has rows in a change table, and
  sys.fn_cdc_get_max_lsn is the largest start_lsn of that table
  (https://learn.microsoft.com/en-us/sql/relational-databases/system-tables/cdc-lsn-time-mapping-transact-sql,
  https://learn.microsoft.com/en-us/sql/relational-databases/system-functions/sys-fn-cdc-get-max-lsn-transact-sql):
  a reader that reads up to max_lsn finds every change of every transaction at or below it.
- The capture process reads the log and writes changes to the change tables only for tables
  enabled when it reads them
  (https://learn.microsoft.com/en-us/sql/relational-databases/track-changes/about-change-data-capture-sql-server).
Expected rows are written out by hand from the transactions each test runs.
"""

from __future__ import annotations

from pathlib import Path

from mssql_cdc.emulator import Emulator
from tests.unit.support.emulator_oracle import at


def shop(path: Path, capture: str = "immediate") -> Emulator:
    emu = Emulator.create(path, start="2026-09-28T13:00:00", capture=capture)  # type: ignore[arg-type]
    emu.create_table(
        "dbo.orders", {"order_id": "int", "status": "nvarchar(20)"}, primary_key="order_id"
    )
    return emu


def changes(emu: Emulator, lo: str | None, hi: str | None) -> list[tuple[str, int, int]]:
    """(start_lsn, operation, order_id) of the changes the library's range read returns."""
    reader = emu.reader()
    lo = lo or emu.min_lsn("dbo_orders")
    rows = reader.read_changes("dbo_orders", lo, hi, row_filter="all").read_all().to_pylist()
    reader.close()
    return [(r["_start_lsn"], r["_operation"], r["order_id"]) for r in rows]


def test_a_transaction_open_while_the_capture_instance_is_enabled_is_captured_once_at_commit(
    tmp_path: Path,
) -> None:
    emu = shop(tmp_path / "e.db")
    open_txn = emu.begin(at=at(1))
    emu.enable_cdc("dbo.orders")
    open_txn.execute([("insert", "dbo.orders", {"order_id": 1, "status": "new"})])
    open_txn.execute([("insert", "dbo.orders", {"order_id": 2, "status": "new"})])
    commit = open_txn.commit(at=at(2))
    later = emu.commit([("insert", "dbo.orders", {"order_id": 3, "status": "new"})], at=at(3))
    assert changes(emu, None, later) == [(commit, 2, 1), (commit, 2, 2), (later, 2, 3)]
    # Read as the stream reads: up to the commit, then from just above it: each change once.
    first = changes(emu, None, commit)
    second = changes(emu, emu.reader().increment_lsn(commit), later)
    assert first == [(commit, 2, 1), (commit, 2, 2)]
    assert second == [(later, 2, 3)]


def test_interleaved_transactions_each_arrive_once_at_their_commit_lsn_in_commit_order(
    tmp_path: Path,
) -> None:
    emu = shop(tmp_path / "e.db")
    emu.enable_cdc("dbo.orders")
    long_one = emu.begin(at=at(1))
    long_one.execute([("insert", "dbo.orders", {"order_id": 10, "status": "new"})])
    short_a = emu.begin(at=at(2))
    short_a.execute([("insert", "dbo.orders", {"order_id": 20, "status": "new"})])
    lsn_a = short_a.commit(at=at(3))
    long_one.execute([("insert", "dbo.orders", {"order_id": 11, "status": "new"})])
    short_b = emu.begin(at=at(4))
    short_b.execute([("insert", "dbo.orders", {"order_id": 30, "status": "new"})])
    lsn_b = short_b.commit(at=at(5))
    lsn_long = long_one.commit(at=at(6))
    assert lsn_a < lsn_b < lsn_long
    assert changes(emu, None, lsn_long) == [
        (lsn_a, 2, 20),
        (lsn_b, 2, 30),
        (lsn_long, 2, 10),
        (lsn_long, 2, 11),
    ]
    # Ranges cut at each commit LSN hold each transaction whole, and in no other range.
    reader = emu.reader()
    assert changes(emu, None, lsn_a) == [(lsn_a, 2, 20)]
    assert changes(emu, reader.increment_lsn(lsn_a), lsn_b) == [(lsn_b, 2, 30)]
    assert changes(emu, reader.increment_lsn(lsn_b), lsn_long) == [
        (lsn_long, 2, 10),
        (lsn_long, 2, 11),
    ]
    mapping = [e["start_lsn"] for e in emu.lsn_time_mapping() if e["tran_id"] != bytes(10)]
    assert mapping[-3:] == [lsn_a, lsn_b, lsn_long]


def test_max_lsn_never_exposes_a_transaction_capture_has_not_written_whole(
    tmp_path: Path,
) -> None:
    emu = shop(tmp_path / "e.db", capture="manual")
    emu.enable_cdc("dbo.orders")
    emu.configure(maxtrans=1)  # one transaction per capture cycle
    long_one = emu.begin(at=at(1))
    long_one.execute([("insert", "dbo.orders", {"order_id": i, "status": "new"}) for i in (1, 2)])
    short = emu.begin(at=at(2))
    short.execute([("insert", "dbo.orders", {"order_id": 9, "status": "new"})])
    lsn_short = short.commit(at=at(3))
    long_one.execute([("insert", "dbo.orders", {"order_id": 3, "status": "new"})])
    lsn_long = long_one.commit(at=at(4))
    expected = {
        lsn_short: [(lsn_short, 2, 9)],
        lsn_long: [(lsn_long, 2, 1), (lsn_long, 2, 2), (lsn_long, 2, 3)],
    }
    seen: list[str | None] = [emu.max_lsn()]
    while emu.pending_capture():
        max_lsn = emu.capture()
        seen.append(max_lsn)
        assert max_lsn is not None
        # Everything committed at or below max_lsn is in the change table, whole.
        want = [row for lsn in sorted(expected) if lsn <= max_lsn for row in expected[lsn]]
        assert changes(emu, None, max_lsn) == want
    assert seen[-1] == lsn_long
    assert lsn_short in seen  # the cycle that captured only the short one stopped at it
