"""Chunked snapshots: the open at S, backfill() in waves next to changes, reruns, crashes, the
statuses and the mode lock (spec 30 sections 3 and 4); the oracle is the emulator's rows."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from mssql_cdc.core.offsets import StreamOffset
from mssql_cdc.core.progress import progress_of
from mssql_cdc.errors import SchemaChangedError
from mssql_cdc.facts.detail_payloads import parse_time
from mssql_cdc.facts.rows import FactsRow, append_facts
from mssql_cdc.snapshot.backfill import backfill
from mssql_cdc.snapshot.chunked_open import open_chunked
from mssql_cdc.snapshot.full import take_full
from mssql_cdc.tables import refs as tables
from mssql_cdc.testing import InjectedFault, clock, failpoints
from tests.spark.support.snapshot_support import Source, make_source

APP = "orders-v1"


@pytest.fixture
def source(spark: SparkSession, tmp_path: Path) -> Source:
    return make_source(spark, tmp_path)


def opened(source: Source) -> StreamOffset:
    return open_chunked(
        source.spark, source.config(numPartitions="1"), source.target, kind="bootstrap",
        generation=0, app_id=APP, facts_table=source.facts,
    )  # fmt: skip


def run(source: Source, **kwargs: object) -> dict[str, object]:
    status = backfill(
        source.spark, source.config(numPartitions="1"), source.target, app_id=APP,
        facts_table=source.facts, **kwargs,  # type: ignore[arg-type]
    )  # fmt: skip
    return dict(status)


def bronze_version(source: Source) -> int:
    history = source.spark.sql(f"DESCRIBE HISTORY delta.`{source.target}`").collect()
    return max(int(r["version"]) for r in history)


def test_a_chunked_bootstrap_in_two_waves_with_changes_between_and_during_rebuilds_the_source(
    source: Source, caplog: pytest.LogCaptureFixture
) -> None:
    source.insert(*range(1, 9))
    s = opened(source)
    source.update(1, "after-open")  # after S, before any wave
    source.insert(20)  # above MAX: the stream has it, no chunk needs it
    with caplog.at_level(logging.INFO, logger="mssql_cdc.snapshot.backfill"):
        first = run(source, chunk_rows=4, max_waves=1)
    # One progress record per wave, as a user with logging configured (or the CLI's bar) sees it.
    [wave] = [p for p in map(progress_of, caplog.records) if p is not None]
    assert (wave.task, wave.subject, wave.done, wave.total, wave.unit) == (
        "backfill", source.target, 1, 2, "chunks",
    )  # fmt: skip
    assert wave.eta_seconds is not None
    assert wave.eta_seconds > 0
    assert "backfill wave 0 of the snapshot at" in caplog.records[-1].getMessage()
    assert "1 of 2 chunks done" in caplog.records[-1].getMessage()
    assert first["state"] == "running"
    assert first["chunks_done"] == 1
    assert first["chunks_total"] == 2
    assert not first["done"]
    assert not first["paused"]
    source.delete(2)
    change: object = ("update", "dbo.orders", {"order_id": 7, "status": "during"})
    source.emu.commit_before_read([change], at=source.tick())  # type: ignore[list-item]
    second = run(source)
    assert second["state"] == "done"
    assert second["done"]
    assert second["chunks_done"] == 2
    assert source.rebuilt(s.lsn) == source.source_rows()
    chunk_rows = source.facts_rows("snapshot_chunk")
    assert sorted(json.loads(r["detail"])["wave"] for r in chunk_rows) == [0, 1]
    assert all(r["min_lsn"] >= s.lsn for r in chunk_rows)  # C2: waves stamped at or after S
    [plan] = source.facts_rows("snapshot_plan")
    assert json.loads(plan["detail"])["chunks"] == [[None, 5], [5, 9]]
    [event] = source.facts_rows("bootstrap")
    assert (event["min_lsn"], event["max_lsn"]) == (s.lsn, s.lsn)
    assert event["rows"] == sum(r["rows"] for r in chunk_rows)
    assert json.loads(event["detail"])["chunks"] == 2
    assert rows_per_chunk(chunk_rows) == bronze_rows_per_chunk(source)


def rows_per_chunk(chunk_rows: list[dict[str, object]]) -> dict[int, object]:
    return {json.loads(str(r["detail"]))["chunk"]: r["rows"] for r in chunk_rows}


def bronze_rows_per_chunk(source: Source) -> dict[int, int]:
    counted: dict[int, int] = {}
    for r in source.bronze():
        if r["_operation"] == 0:
            counted[r["_chunk"]] = counted.get(r["_chunk"], 0) + 1
    return counted


def test_reruns_of_a_finished_backfill_append_nothing(source: Source) -> None:
    source.insert(1, 2, 3)
    opened(source)
    assert run(source)["state"] == "done"
    version = bronze_version(source)
    facts = len(source.facts_rows())
    again = run(source)
    assert again["state"] == "done"
    assert again["chunks_done"] == again["chunks_total"] == 1
    assert bronze_version(source) == version
    assert len(source.facts_rows()) == facts


def test_a_crash_after_a_wave_append_is_resumed_without_a_second_append(source: Source) -> None:
    source.insert(*range(1, 7))
    s = opened(source)
    with failpoints({"backfill.after_wave_append": "raise"}), pytest.raises(InjectedFault):
        run(source, chunk_rows=3, max_waves=1)
    assert source.facts_rows("snapshot_chunk") == []  # the wave is in bronze, its facts are not
    assert run(source)["state"] == "done"
    snapshot_rows = [r for r in source.bronze() if r["_operation"] == 0]
    assert sorted(r["order_id"] for r in snapshot_rows) == [1, 2, 3, 4, 5, 6]
    chunks = sorted(json.loads(r["detail"])["chunk"] for r in source.facts_rows("snapshot_chunk"))
    assert chunks == [0, 1]
    assert source.rebuilt(s.lsn) == source.source_rows()


def test_backfill_without_a_chunked_snapshot_says_so(source: Source) -> None:
    status = run(source)
    assert status == {
        "snapshot": None, "chunks_done": 0, "chunks_total": None, "done": False,
        "paused": True, "state": "no_snapshot",
        "reason": f"no chunked snapshot is open for app_id {APP!r} in {source.facts}",
    }  # fmt: skip


def _batch_row(headroom: float | None, written_at: str) -> FactsRow:
    return FactsRow(
        app_id=APP, generation=0, batch_id=0, rows=0, retention_headroom_hours=headroom,
        target="t", written_at=parse_time(written_at),
    )  # fmt: skip


def test_the_headroom_throttle_pauses_before_a_wave(source: Source) -> None:
    source.insert(1)
    s = opened(source)
    assert run(source, min_headroom_hours=1)["state"] == "waiting_metrics"
    tables.ensure_table(source.spark, source.facts, "facts")
    append_facts(source.spark, source.facts, [_batch_row(2.0, "2026-10-01T00:00:00")], key=None)
    with clock("2026-10-01T01:57:00"):  # 1.95 h after the row: 2.0 - 1.95 = 0.05 h left
        status = run(source, min_headroom_hours=1)
    assert status["state"] == "waiting_headroom"
    assert status["paused"]
    assert status["reason"] == "headroom 0.05 h is below min_headroom_hours=1"
    assert status["snapshot"] == s.lsn
    assert status["chunks_done"] == 0


def test_the_mode_lock_refuses_backfill_while_a_full_snapshot_is_being_read(
    source: Source,
) -> None:
    source.insert(1)
    with failpoints({"snapshot.before_append": "raise"}), pytest.raises(InjectedFault):
        take_full(
            source.spark, source.config(), source.target, kind="bootstrap", generation=0,
            new=False, app_id=APP, facts_table=source.facts,
        )  # fmt: skip
    [open_row] = source.facts_rows("snapshot_open")
    s = open_row["min_lsn"]
    expected = (
        f"{source.target}: a full snapshot open at {s} (generation 0) has not completed: it "
        "is being read, or the run reading it crashed. Rerun with snapshot='full' to complete "
        f"it, or wait until CDC cleanup passes {s}; then snapshot='chunked' may take its "
        "generation over."
    )
    with pytest.raises(ValueError, match="has not completed") as refused:
        run(source)
    assert str(refused.value) == expected


def test_backfill_refuses_to_go_on_when_the_table_is_keyed_otherwise_than_at_the_open(
    source: Source,
) -> None:
    source.insert(*range(1, 5))
    s = opened(source)  # recorded on the instance's index: order_id
    assert run(source, chunk_rows=2, max_waves=1)["state"] == "running"
    rekeyed = source.config(numPartitions="1", snapshotKeys='["status", "order_id"]')
    version, facts = bronze_version(source), len(source.facts_rows())
    with pytest.raises(SchemaChangedError) as refused:
        backfill(source.spark, rekeyed, source.target, app_id=APP, facts_table=source.facts)
    assert str(refused.value) == (
        f"{source.target}: the chunked snapshot at {s.lsn} cannot go on: it was planned on key "
        "(order_id), and the table's key is now (status, order_id), so its chunks no longer "
        "tile the table. Take a new snapshot: CdcStream.resnapshot(..., snapshot='chunked') "
        "or `mssql-cdc resnapshot --snapshot chunked` opens one (the open one is then never "
        "completed)"
    )
    assert (bronze_version(source), len(source.facts_rows())) == (version, facts)
    assert run(source)["state"] == "done"  # the recorded key again: it goes on
