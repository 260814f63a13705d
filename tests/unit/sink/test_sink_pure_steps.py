"""The sink's steps that need no JVM: the metrics directory and bronze's schema pre-check."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from mssql_cdc.core.events import EventRecord
from mssql_cdc.sink.bronze import retyped_columns, unmappable_new_columns
from mssql_cdc.sink.metrics_dir import clear_dead_attempts, remove_files, scan

SKIP = {
    "event": "data_skipped",
    "capture_instance": "dbo_orders",
    "lsn": "0x00000000000000000009",
    "commit_ts": "2026-10-01T12:00:09.000",
    "detail": {"from": "0x00000000000000000002", "to": "0x00000000000000000009"},
    "lost_from_ts": None,
    "lost_to_ts": None,
    "batch_start_lsn": "0x00000000000000000001",
    "batch_end_lsn": "0x00000000000000000009",
}
SKIPPED = EventRecord(
    event="data_skipped",
    capture_instance="dbo_orders",
    lsn="0x00000000000000000009",
    commit_ts="2026-10-01T12:00:09.000",
    detail={"from": "0x00000000000000000002", "to": "0x00000000000000000009"},
    lost_from_ts=None,
    lost_to_ts=None,
    batch_start_lsn="0x00000000000000000001",
    batch_end_lsn="0x00000000000000000009",
)


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)
    return folder / name


def test_clearing_keeps_event_files_and_subdirectories(tmp_path: Path) -> None:
    write(tmp_path, "range-a-b.json", "{}")
    write(tmp_path, ".range-a-b.json.0f.tmp", "{")
    write(tmp_path, "event-data_skipped-dbo_orders-0x1.json", json.dumps(SKIP))
    write(tmp_path / "_backfill", "chunk-0.json", "{}")

    assert clear_dead_attempts(tmp_path) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "_backfill",
        "event-data_skipped-dbo_orders-0x1.json",
    ]
    assert clear_dead_attempts(tmp_path / "missing") == 0


def test_clearing_keeps_files_the_reader_did_not_write(tmp_path: Path) -> None:
    write(tmp_path, "range-a-b.json", "{}")
    write(tmp_path, "notes.txt", "someone's notes")
    write(tmp_path, "run.log", "a log")

    assert clear_dead_attempts(tmp_path) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt", "run.log"]


def test_clearing_never_follows_a_symbolic_link_out_of_the_folder(tmp_path: Path) -> None:
    outside = write(tmp_path / "elsewhere", "range-x-y.json", '{"keep": true}')
    folder = tmp_path / "metrics"
    folder.mkdir()
    (folder / "range-x-y.json").symlink_to(outside)
    (folder / "sub").symlink_to(outside.parent, target_is_directory=True)

    clear_dead_attempts(folder)
    remove_files(scan(folder).paths)

    assert outside.read_text() == '{"keep": true}'
    assert sorted(p.name for p in outside.parent.iterdir()) == ["range-x-y.json"]


def test_scanning_skips_unreadable_files_but_returns_them_for_removal(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ranged = {"to_lsn": "0x2", "events": [SKIP, {**SKIP, "lsn": None}]}
    good = write(tmp_path, "range-1-2.json", json.dumps(ranged))
    torn = write(tmp_path, "range-3-4.json", '{"to_lsn": ')
    listed = write(tmp_path, "range-5-6.json", "[1, 2]")
    event = write(tmp_path, "event-data_skipped-dbo_orders-0x2.json", json.dumps(SKIP))
    foreign = write(tmp_path, "event-other-x.json", json.dumps({**SKIP, "event": "vacuum"}))
    write(tmp_path, ".range-7-8.json.1a.tmp", "{")
    write(tmp_path / "_backfill", "chunk-0.json", "{}")

    with caplog.at_level(logging.WARNING, logger="mssql_cdc.sink.writer"):
        found = scan(tmp_path)

    assert found.ranges == (ranged,)  # a record left out leaves its range's metrics in
    assert found.events == (SKIPPED, SKIPPED)  # the event file's, then the range file's
    assert sorted(found.paths) == sorted([good, torn, listed, event, foreign])
    warned = " ".join(r.getMessage() for r in caplog.records)
    for path in (torn, listed, foreign):
        assert str(path) in warned
    assert f"{good} events[1] is not a source event record: its lsn is not a string" in warned

    remove_files(found.paths)
    remove_files(found.paths)  # already gone is fine
    assert sorted(p.name for p in tmp_path.iterdir()) == [".range-7-8.json.1a.tmp", "_backfill"]


TABLE = StructType(
    [
        StructField("_start_lsn", StringType()),
        StructField("id", IntegerType()),
        StructField("note", StringType()),
    ]
)


def test_only_a_retyped_or_unmappable_column_needs_the_table_properties() -> None:
    same = StructType(
        [
            StructField("_START_LSN", StringType()),  # names compare ignoring case
            StructField("id", IntegerType()),
            StructField("amount", LongType()),  # new: mergeSchema adds it
        ]
    )
    assert retyped_columns(TABLE, same) == []
    assert unmappable_new_columns(TABLE, same) == []

    changed = StructType(
        [
            StructField("id", LongType()),
            StructField("note", IntegerType()),
            StructField("unit price", StringType()),
            StructField("NOTE2", StringType()),
        ]
    )
    assert retyped_columns(TABLE, changed) == ["id", "note"]
    assert unmappable_new_columns(TABLE, changed) == ["unit price"]
