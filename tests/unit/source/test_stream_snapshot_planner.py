"""The stream planner with the source's own snapshots (option snapshotMode), its driver
methods and the executor read called directly (no JVM).

Oracles: the emulator's table and LSNs, and plain Python (the keys the test inserted).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from mssql_cdc.emulator import Emulator
from mssql_cdc.errors import DataLossError
from mssql_cdc.source.stream_snapshot import SourceOffset
from mssql_cdc.testing import clock
from tests.unit.source.test_source_planner import commits, reader_for, rows_of
from tests.unit.support.emulator_oracle import at, orders


def keys(rows: list[dict]) -> list[int]:
    return [r["order_id"] for r in rows]


def loss(emu: Emulator, start: float, first_key: int = 100) -> None:
    """Changes the stream has not read, then cleanup past them all."""
    commits(emu, range(first_key, first_key + 2), start=start)
    emu.cleanup("dbo_orders", emu.idle(at=at(start + 5)))


def test_initial_reads_the_table_in_key_batches_of_the_read_limit_then_the_changes(
    tmp_path: Path,
) -> None:
    path = tmp_path / "e.db"
    emu = orders(path)
    commits(emu, range(5))
    stamp = emu.max_lsn()
    reader = reader_for(path, snapshotMode="initial")
    start = reader.initialOffset()
    assert start["lsn"] == stamp
    assert start["snapshot"] == "null"  # the snapshot at S, nothing read yet
    batches = []
    while True:
        end = reader.latestOffset(start, ReadMaxRows(2))
        if end == start:
            break
        batches.append(rows_of(reader, start, end))
        start = end
    assert [keys(b) for b in batches] == [[0, 1], [2, 3], [4]]
    assert {(r["_operation"], r["_start_lsn"], r["_snapshot"]) for b in batches for r in b} == {
        (0, stamp, stamp)
    }
    assert start == {"lsn": stamp, "commit_ts": start["commit_ts"], "snapshot": "done"}

    commits(emu, range(5, 7), start=20)
    end = reader.latestOffset(start, ReadMaxRows(2))
    assert set(end) == {"lsn", "commit_ts"}  # a change offset, as before the option
    changes = rows_of(reader, start, end)
    assert [(r["order_id"], r["_operation"], r["_snapshot"]) for r in changes] == [
        (5, 2, None),
        (6, 2, None),
    ]


def test_without_a_read_limit_the_whole_snapshot_is_one_batch(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    emu = orders(path)
    commits(emu, range(4))
    reader = reader_for(path, snapshotMode="initial")
    start = reader.initialOffset()
    end = reader.latestOffset(start, ReadAllAvailable())
    assert end["snapshot"] == "done"
    assert keys(rows_of(reader, start, end)) == [0, 1, 2, 3]


def test_never_keeps_the_schema_and_offsets_of_changes_only(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    emu = orders(path)
    commits(emu, range(2))
    reader = reader_for(path)
    start = reader.initialOffset()
    end = reader.latestOffset(start, ReadAllAvailable())
    assert set(start) == set(end) == {"lsn", "commit_ts"}
    assert all("_snapshot" not in r for r in rows_of(reader, start, end))


def test_when_needed_turns_a_loss_into_a_new_snapshot_once_per_interval(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    emu = orders(path)
    commits(emu, range(3))
    reader = reader_for(path, snapshotMode="when_needed")
    start = reader.initialOffset()
    start = reader.latestOffset(start, ReadAllAvailable())  # the initial snapshot, whole
    first = datetime(2026, 10, 1, tzinfo=UTC)

    loss(emu, 30)
    with clock(first):
        end = reader.latestOffset(start, ReadAllAvailable())
    again = SourceOffset.from_json(end)
    assert again.position.lsn == emu.max_lsn()  # the new snapshot's S
    assert again.resnapshot_at == first
    assert keys(rows_of(reader, start, end)) == [0, 1, 2, 100, 101]
    start = end

    loss(emu, 60, first_key=200)
    with clock(first + timedelta(days=6)), pytest.raises(DataLossError) as caught:
        reader.latestOffset(start, ReadAllAvailable())
    assert "re-snapshots at most once" in str(caught.value)
    with clock(first + timedelta(days=7)):
        later = SourceOffset.from_json(reader.latestOffset(start, ReadAllAvailable()))
    assert later.cursor is not None
    assert later.resnapshot_at == first + timedelta(days=7)


def test_initial_does_not_re_snapshot_a_loss(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    emu = orders(path)
    commits(emu, range(2))
    reader = reader_for(path, snapshotMode="initial")
    start = reader.latestOffset(reader.initialOffset(), ReadAllAvailable())
    loss(emu, 30)
    end = reader.latestOffset(start, ReadAllAvailable())
    with pytest.raises(DataLossError, match="purged by CDC cleanup"):
        reader.partitions(start, end)


def test_when_needed_reads_a_change_batch_purged_after_its_offsets_as_the_whole_table(
    tmp_path: Path,
) -> None:
    """A cleanup between latestOffset and partitions (or a replay after a long stop): the batch's
    offsets are fixed, so the batch becomes a snapshot stamped at its end offset."""
    path = tmp_path / "e.db"
    emu = orders(path)
    commits(emu, range(3))
    reader = reader_for(path, snapshotMode="when_needed")
    start = reader.latestOffset(reader.initialOffset(), ReadAllAvailable())
    emu.commit([("delete", "dbo.orders", {"order_id": 1})], at=at(30))
    commits(emu, range(7, 8), start=31)
    end = reader.latestOffset(start, ReadAllAvailable())
    assert set(end) == {"lsn", "commit_ts"}  # a change batch, planned before the cleanup
    emu.cleanup("dbo_orders", emu.idle(at=at(40)))
    rows = rows_of(reader, start, end)
    assert sorted(keys(rows)) == [0, 2, 7]  # the table as it is: key 1 is gone
    assert {(r["_operation"], r["_start_lsn"], r["_snapshot"]) for r in rows} == {
        (0, end["lsn"], end["lsn"])
    }
    initial = reader_for(path, snapshotMode="initial")
    with pytest.raises(DataLossError, match="purged by CDC cleanup"):
        initial.partitions(start, end)
