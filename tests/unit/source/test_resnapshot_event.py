"""The loss an in-stream re-snapshot replaces (snapshotMode=when_needed), recorded as a certain
`data_skipped` event file by the planner (no JVM).

Oracles: the LSNs the test's own commits and idle entry returned, and Microsoft's documentation
of sys.sp_cdc_cleanup_change_table: the low water mark passed becomes the instance's new low
endpoint, and change rows below it are removed
(https://learn.microsoft.com/en-us/sql/relational-databases/system-stored-procedures/sys-sp-cdc-cleanup-change-table-transact-sql).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pyspark.sql.streaming.datasource import ReadAllAvailable

from mssql_cdc.emulator import Emulator
from mssql_cdc.source.loss_guards import resnapshot_event
from tests.unit.source.test_source_planner import commits, reader_for, rows_of
from tests.unit.support.emulator_oracle import at, orders


def event_files(metrics: Path) -> dict[str, dict[str, Any]]:
    if not metrics.is_dir():
        return {}
    return {
        p.name: json.loads(p.read_text())
        for p in sorted(metrics.iterdir())
        if p.name.startswith("event-")
    }


def streamed(path: Path, metrics: Path) -> tuple[Emulator, Any, dict[str, str], list[str]]:
    """A when_needed stream past its initial snapshot and one change batch; the LSNs of the
    changes it read."""
    emu = orders(path)
    commits(emu, range(3))
    reader = reader_for(path, snapshotMode="when_needed", metricsPath=str(metrics))
    start = reader.latestOffset(reader.initialOffset(), ReadAllAvailable())
    rows_of(reader, start, start)
    read = commits(emu, range(10, 12), start=20)
    end = reader.latestOffset(start, ReadAllAvailable())
    assert [r["order_id"] for r in rows_of(reader, start, end)] == [10, 11]
    return emu, reader, end, read


def test_the_first_batch_of_a_re_snapshot_writes_one_certain_data_skipped_event_file(
    tmp_path: Path,
) -> None:
    metrics = tmp_path / "metrics"
    emu, reader, start, read = streamed(tmp_path / "e.db", metrics)
    assert event_files(metrics) == {}  # the initial snapshot and the changes record no loss
    lost = commits(emu, range(100, 102), start=30)
    mark = emu.idle(at=at(35))
    emu.cleanup("dbo_orders", mark)
    end = reader.latestOffset(start, ReadAllAvailable())
    rows = rows_of(reader, start, end)
    stamp = end["lsn"]
    assert {r["_snapshot"] for r in rows} == {stamp}

    files = event_files(metrics)
    assert len(files) == 1
    ((name, record),) = files.items()
    first = record["lsn"]
    assert read[-1] < first <= lost[0]  # the first LSN after the last one read
    assert name == f"event-data_skipped-dbo_orders-{first}.json"
    assert record["event"] == "data_skipped"
    assert record["detail"] == {
        "from": first,
        "to": mark,
        "certain": True,
        "capture_instance": "dbo_orders",
        "resnapshot_lsn": stamp,
        "snapshot_mode": "when_needed",
    }
    assert record["lost_from_ts"] == start["commit_ts"]  # the last change read, at(21)
    assert start["commit_ts"].startswith(at(21)[:19])
    assert record["lost_to_ts"].startswith(at(35)[:19])  # the low water mark's commit
    assert (record["batch_start_lsn"], record["batch_end_lsn"]) == (start["lsn"], stamp)

    # a replay plans the batch again: the same file, the same record, nothing added
    rows_of(reader, start, end)
    assert event_files(metrics) == files


def test_a_change_batch_purged_after_its_offsets_records_its_loss_at_its_end(
    tmp_path: Path,
) -> None:
    """The DataLossError fallback: the batch becomes the table stamped at its end offset."""
    metrics = tmp_path / "metrics"
    emu, reader, start, read = streamed(tmp_path / "e.db", metrics)
    lost = commits(emu, range(100, 102), start=30)
    end = reader.latestOffset(start, ReadAllAvailable())
    assert set(end) == {"lsn", "commit_ts"}  # planned as a change batch
    mark = emu.idle(at=at(35))
    emu.cleanup("dbo_orders", mark)
    rows = rows_of(reader, start, end)
    assert {r["_snapshot"] for r in rows} == {end["lsn"]}
    (record,) = event_files(metrics).values()
    assert read[-1] < record["lsn"] <= lost[0]
    assert record["detail"]["from"] == record["lsn"]
    assert record["detail"]["to"] == mark
    assert record["detail"]["resnapshot_lsn"] == end["lsn"]
    assert record["detail"]["snapshot_mode"] == "when_needed"
    assert record["lost_from_ts"] == start["commit_ts"]


def test_without_a_metrics_folder_a_re_snapshot_writes_no_file(tmp_path: Path) -> None:
    emu = orders(tmp_path / "e.db")
    commits(emu, range(2))
    reader = reader_for(tmp_path / "e.db", snapshotMode="when_needed")
    start = reader.latestOffset(reader.initialOffset(), ReadAllAvailable())
    commits(emu, range(100, 102), start=30)
    emu.cleanup("dbo_orders", emu.idle(at=at(35)))
    end = reader.latestOffset(start, ReadAllAvailable())
    assert {r["order_id"] for r in rows_of(reader, start, end)} == {0, 1, 100, 101}
    assert list(tmp_path.rglob("event-*")) == []  # as a skip's: the WARNING only


def test_the_initial_snapshot_records_no_loss(tmp_path: Path) -> None:
    metrics = tmp_path / "metrics"
    emu = orders(tmp_path / "e.db")
    commits(emu, range(2))
    reader = reader_for(tmp_path / "e.db", snapshotMode="when_needed", metricsPath=str(metrics))
    start = reader.initialOffset()
    end = reader.latestOffset(start, ReadAllAvailable())
    assert len(rows_of(reader, start, end)) == 2
    assert event_files(metrics) == {}


def test_the_record_names_its_first_lost_lsn_and_the_snapshot_that_replaces_the_changes() -> None:
    record = resnapshot_event(
        "dbo_orders",
        "0x0000002a000000010001",
        "0x0000003000000001000a",
        "0x00000040000000010003",
        min_commit_ts="2026-09-25T14:10:00.000",
        lost_from_ts="2026-09-22T08:00:00.000",
        batch_start_lsn="0x00000029000000050004",
        batch_end_lsn="0x00000040000000010003",
    )
    assert record.to_json() == {
        "event": "data_skipped",
        "capture_instance": "dbo_orders",
        "lsn": "0x0000002a000000010001",
        "commit_ts": "2026-09-25T14:10:00.000",
        "detail": {
            "from": "0x0000002a000000010001",
            "to": "0x0000003000000001000a",
            "certain": True,
            "capture_instance": "dbo_orders",
            "resnapshot_lsn": "0x00000040000000010003",
            "snapshot_mode": "when_needed",
        },
        "lost_from_ts": "2026-09-22T08:00:00.000",
        "lost_to_ts": "2026-09-25T14:10:00.000",
        "batch_start_lsn": "0x00000029000000050004",
        "batch_end_lsn": "0x00000040000000010003",
    }
    assert record.file_name == "event-data_skipped-dbo_orders-0x0000002a000000010001.json"
