"""The source's own snapshots (option snapshotMode), through Spark's real streaming engine
against the emulator, with plain sinks of the test's own: a foreachBatch that collects rows.

The oracles are plain Python: the emulator's table rows (`Emulator.rows`) and the changes the
test committed, and a downstream merge written independently of the library
(`tests/spark/support/stream_snapshot_support.merged`): apply each
row in (`_start_lsn`, `_seqval`, `_operation`) order; a delete removes the key; a snapshot row
(`_operation` 0) and an insert or update after-image set it; and once a re-snapshot at S has
arrived whole, keys it lacks whose last row came from before S are gone (docs/source.md,
'Snapshots in the stream').
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession

from mssql_cdc import register
from mssql_cdc.emulator import Emulator
from tests.spark.support.backends import BACKENDS, Backend, backend_options
from tests.spark.support.stream_snapshot_support import at_second, merged, orders, source_table
from tests.support import emulator_profile


def run(
    spark: SparkSession,
    path: Path,
    checkpoint: Path,
    *,
    fail_at: int | None = None,
    backend: Backend = "emulator",
    progress: list[dict[str, Any]] | None = None,
    **options: str,
) -> list[list[dict[str, Any]]]:
    """One availableNow run through `backend`; the rows of each batch in order. With `fail_at`,
    the sink fails batch `fail_at` (counted in this run) before keeping its rows, and the query
    fails. `progress` receives the query's progress records."""
    register(spark)
    batches: list[list[dict[str, Any]]] = []

    def collect(df: DataFrame, batch_id: int) -> None:
        if fail_at is not None and len(batches) == fail_at:
            raise RuntimeError("the test's sink fails this batch")
        batches.append([r.asDict() for r in df.collect()])

    query = (
        spark.readStream.format("mssql_cdc")
        .options(captureInstance="dbo_orders", **backend_options(path, backend))
        .options(**options)
        .load()
        .writeStream.foreachBatch(collect)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    if fail_at is None:
        assert query.awaitTermination(300)
    else:
        with pytest.raises(StreamingQueryException, match="the test's sink fails this batch"):
            query.awaitTermination(300)
    if progress is not None:
        progress += [json.loads(p.json) for p in query.recentProgress]
    return batches


def test_an_initial_snapshot_arrives_in_key_chunks_then_only_the_changes_after_it(
    spark: SparkSession, tmp_path: Path
) -> None:
    path, ckpt = tmp_path / "e.db", tmp_path / "ckpt"
    emu = orders(path, 10)
    stamp = emu.max_lsn()
    progress: list[dict[str, Any]] = []
    first = run(
        spark, path, ckpt, progress=progress, snapshotMode="initial", maxCommitsPerBatch="4"
    )
    # a sink sees in the query's progress where the snapshot stands
    ends = [p["sources"][0]["endOffset"] for p in progress if p["numInputRows"]]
    assert [e.get("snapshot") for e in ends] == ["4", "8", "done"]
    assert {e["lsn"] for e in ends} == {stamp}
    sizes = [len(b) for b in first if b]
    assert sizes == [4, 4, 2]  # no batch above maxCommitsPerBatch rows
    rows = [r for b in first for r in b]
    assert sorted(r["order_id"] for r in rows) == list(range(10))
    assert {(r["_operation"], r["_start_lsn"], r["_snapshot"]) for r in rows} == {(0, stamp, stamp)}
    # each batch holds the next keys in order
    assert [r["order_id"] for r in rows] == sorted(r["order_id"] for r in rows)

    emu.commit([("update", "dbo.orders", {"order_id": 3, "status": "paid"})], at=at_second(40))
    emu.commit([("delete", "dbo.orders", {"order_id": 4})], at=at_second(41))
    emulator_profile.wait_for_capture(emu, at_second(41))
    second = run(spark, path, ckpt, snapshotMode="initial", maxCommitsPerBatch="4")
    changes = [r for b in second for r in b]
    assert sorted((r["order_id"], r["_operation"]) for r in changes) == [(3, 3), (3, 4), (4, 1)]
    assert all(r["_snapshot"] is None and r["_start_lsn"] > (stamp or "") for r in changes)
    assert merged(rows + changes) == source_table(emu)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_restart_in_the_middle_of_the_initial_snapshot_reads_each_row_once(
    spark: SparkSession, tmp_path: Path, backend: Backend
) -> None:
    """Through each backend: the next key travels in the offset as JSON and back."""
    path, ckpt = tmp_path / "e.db", tmp_path / "ckpt"
    emu = orders(path, 9)
    kept = run(
        spark,
        path,
        ckpt,
        fail_at=1,
        backend=backend,
        snapshotMode="initial",
        maxCommitsPerBatch="3",
    )
    assert [len(b) for b in kept] == [3]
    # a change to a key already read while the snapshot is unfinished: it arrives after the
    # snapshot, as a change
    emu.commit([("update", "dbo.orders", {"order_id": 1, "status": "late"})], at=at_second(50))
    emulator_profile.wait_for_capture(emu, at_second(50))
    rest = run(spark, path, ckpt, backend=backend, snapshotMode="initial", maxCommitsPerBatch="3")
    rows = [r for b in kept + rest for r in b]
    snapshot = [r["order_id"] for r in rows if r["_operation"] == 0]
    assert sorted(snapshot) == list(range(9))  # every key once, none twice
    changes = [(r["order_id"], r["_operation"]) for r in rows if r["_operation"] != 0]
    assert sorted(changes) == [(1, 3), (1, 4)]
    assert merged(rows) == source_table(emu)


def lose_everything_unread(emu: Emulator, when: str) -> None:
    """An idle entry at `when`, days later, then the cleanup job: every change before it is
    purged (retention counts from the newest entry)."""
    emu.idle(at=when)
    emulator_profile.wait_for_capture(emu, when)
    emu.run_cleanup_job()


def test_a_loss_under_when_needed_re_snapshots_inside_the_stream_and_a_merge_stays_equal(
    spark: SparkSession, tmp_path: Path
) -> None:
    path, ckpt = tmp_path / "e.db", tmp_path / "ckpt"
    emu = orders(path, 6)
    first = run(spark, path, ckpt, snapshotMode="when_needed", maxCommitsPerBatch="4")
    assert [len(b) for b in first if b] == [4, 2]
    # changes the stream never reads: cleanup purges them first
    emu.commit([("update", "dbo.orders", {"order_id": 1, "status": "paid"})], at=at_second(40))
    emu.commit([("delete", "dbo.orders", {"order_id": 2})], at=at_second(41))
    emu.commit([("insert", "dbo.orders", {"order_id": 10, "status": "new"})], at=at_second(42))
    lose_everything_unread(emu, "2026-10-03T00:00:00")
    second = run(spark, path, ckpt, snapshotMode="when_needed", maxCommitsPerBatch="4")
    again = [r for b in second for r in b]
    stamps = {r["_snapshot"] for r in again}
    assert len(stamps) == 1  # one new snapshot
    assert None not in stamps  # and no change row
    [stamp] = stamps
    assert stamp > max(r["_snapshot"] for b in first for r in b)
    assert {(r["_operation"], r["_start_lsn"]) for r in again} == {(0, stamp)}
    assert sorted(r["order_id"] for r in again) == [0, 1, 3, 4, 5, 10]
    assert [len(b) for b in second if b] == [4, 2]
    rows = [r for b in first + second for r in b]
    assert (
        merged(rows)
        == source_table(emu)
        == {0: "new", 1: "paid", 3: "new", 4: "new", 5: "new", 10: "new"}
    )

    # a change after the re-snapshot streams as usual
    emu.commit([("delete", "dbo.orders", {"order_id": 0})], at="2026-10-03T00:01:00")
    emulator_profile.wait_for_capture(emu, "2026-10-03T00:01:00")
    third = run(spark, path, ckpt, snapshotMode="when_needed", maxCommitsPerBatch="4")
    assert [(r["order_id"], r["_operation"], r["_snapshot"]) for b in third for r in b] == [
        (0, 1, None)
    ]
    assert merged(rows + [r for b in third for r in b]) == source_table(emu)

    # a second loss within the anti-loop interval fails as a loss did before
    emu.commit([("delete", "dbo.orders", {"order_id": 3})], at="2026-10-03T00:02:00")
    lose_everything_unread(emu, "2026-10-08T00:00:00")
    register(spark)
    query = (
        spark.readStream.format("mssql_cdc")
        .options(captureInstance="dbo_orders", backend="emulator", emulatorPath=str(path))
        .options(snapshotMode="when_needed", maxCommitsPerBatch="4")
        .load()
        .writeStream.foreachBatch(lambda df, _: df.count())
        .option("checkpointLocation", str(ckpt))
        .trigger(availableNow=True)
        .start()
    )
    with pytest.raises(StreamingQueryException, match="re-snapshots at most once"):
        query.awaitTermination(300)


def test_a_batch_replayed_after_its_changes_were_purged_reads_the_table_under_when_needed(
    spark: SparkSession, tmp_path: Path
) -> None:
    """The sink fails a change batch, the stream stops for days, cleanup purges the batch's
    range: the restart must replay that batch's offsets, and reads the table instead."""
    path, ckpt = tmp_path / "e.db", tmp_path / "ckpt"
    emu = orders(path, 4)
    first = run(spark, path, ckpt, snapshotMode="when_needed")
    assert [len(b) for b in first if b] == [4]
    emu.commit([("delete", "dbo.orders", {"order_id": 2})], at=at_second(40))
    emu.commit([("insert", "dbo.orders", {"order_id": 9, "status": "new"})], at=at_second(41))
    emulator_profile.wait_for_capture(emu, at_second(41))
    assert run(spark, path, ckpt, fail_at=0, snapshotMode="when_needed") == []
    lose_everything_unread(emu, "2026-10-03T00:00:00")
    replay = run(spark, path, ckpt, snapshotMode="when_needed")
    rows = [r for b in replay for r in b]
    assert sorted(r["order_id"] for r in rows if r["_operation"] == 0) == [0, 1, 3, 9]
    assert merged([r for b in first for r in b] + rows) == source_table(emu)
