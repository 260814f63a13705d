"""The foreachBatch sink on a real local Delta: exactly once, replays, metrics, events, schemas.

Batches are hand-built in the stream's output schema (`sink_batches.reading`), whose partitions
write their metrics files while the sink reads them, as the source's tasks do. Every expected
value is typed out or counted in plain Python.
"""

from __future__ import annotations

import json
import logging
import os
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from delta.tables import DeltaTable
from pyspark.sql import SparkSession
from pyspark.sql.types import LongType, StringType, StructField, StructType

from mssql_cdc.errors import SchemaChangedError
from mssql_cdc.sink.writer import delta_sink
from mssql_cdc.testing import InjectedFault, failpoints
from tests.spark.support.sink_batches import (
    STREAM,
    at,
    bronze_rows,
    change,
    commit_metadata,
    event_record,
    facts_rows,
    latest_version,
    lsn,
    range_metrics,
    reading,
    write_event_file,
)
from tests.spark.support.sink_replay import (
    batch_rows,
    check_a_replayed_batch_commits_once,
    with_batch,
)


@pytest.fixture
def paths(tmp_path: Path) -> tuple[str, str, Path]:
    return str(tmp_path / "bronze"), str(tmp_path / "facts"), tmp_path / "metrics"


def test_sink_replay_writes_once(spark: SparkSession, paths: tuple[str, str, Path]) -> None:
    bronze, facts, _ = paths
    check_a_replayed_batch_commits_once(spark, bronze, facts)


def test_a_later_generation_writes_under_its_own_sink_id(
    spark: SparkSession, paths: tuple[str, str, Path]
) -> None:
    bronze, facts, _ = paths
    delta_sink(bronze, "orders", facts)(reading(spark, [change(1, 2, 1, "a")]), 0)
    # generation 2 restarts batch ids at 0: its own txnAppId keeps Delta from skipping it
    delta_sink(bronze, "orders", facts, generation=2)(reading(spark, [change(9, 2, 9, "z")]), 0)

    assert bronze_rows(spark, bronze) == sorted(
        with_batch([change(1, 2, 1, "a")], 0) + with_batch([change(9, 2, 9, "z")], 0)
    )
    owners = sorted((r["app_id"], r["generation"], r["batch_id"]) for r in facts_rows(spark, facts))
    assert owners == [("orders", 0, 0), ("orders.g2", 2, 0)]


def test_a_zero_row_batch_leaves_an_empty_bronze_commit_and_a_facts_row(
    spark: SparkSession, paths: tuple[str, str, Path], tmp_path: Path
) -> None:
    # one pass: the rows are known only after the append, so the append is made (decision 1350)
    bronze, facts, metrics = paths
    sink = delta_sink(bronze, "idle", facts, metrics_path=str(metrics))
    sink(
        reading(
            spark, [change(1, 2, 1, "a")], metrics_dir=metrics, ranges=[range_metrics(1, 1, rows=1)]
        ),
        0,
    )
    before = latest_version(spark, bronze)

    # commits 2 to 5 touched only other tables: the range reads no rows
    sink(reading(spark, [], metrics_dir=metrics, ranges=[range_metrics(2, 5, rows=0)]), 1)

    assert latest_version(spark, bronze) == before + 1
    assert commit_metadata(spark, bronze, before + 1) == {
        "batch_id": 1,
        "app_id": "idle",
        "generation": 0,
    }
    assert bronze_rows(spark, bronze) == sorted(with_batch([change(1, 2, 1, "a")], 0))
    idle = batch_rows(facts_rows(spark, facts))[1]
    assert (idle["batch_id"], idle["rows"], idle["inserts"], idle["updates"]) == (1, 0, 0, 0)
    assert (idle["deletes"], idle["min_lsn"], idle["max_lsn"]) == (0, None, None)
    assert (idle["end_lsn"], idle["end_commit_ts"]) == (lsn(5), at(5))
    assert list(metrics.iterdir()) == []

    first = str(tmp_path / "first")  # a 0-row first batch creates bronze from its schema
    delta_sink(first, "idle2", facts)(reading(spark, []), 0)
    assert DeltaTable.isDeltaTable(spark, first)
    assert spark.read.format("delta").load(first).count() == 0
    assert [r["rows"] for r in facts_rows(spark, facts) if r["app_id"] == "idle2"] == [0]


def test_an_append_delta_skips_unforeseen_still_gives_exact_counts(
    spark: SparkSession, paths: tuple[str, str, Path]
) -> None:
    # Two sink objects of one sink id: the second learnt what bronze held at its first call,
    # so it does not foresee that the first already appended batch 1. Delta skips that append,
    # the observation reports nothing, and the sink reads the batch again (decision 1350).
    bronze, facts, _ = paths
    first_batch = [change(1, 2, 1, "a")]
    second_batch = [change(2, 2, 2, "b"), change(3, 1, 1, None), change(3, 4, 2, "b2", 1)]
    late = delta_sink(bronze, "twice", facts)
    late(reading(spark, first_batch), 0)
    early = delta_sink(bronze, "twice", facts)
    with (
        failpoints({"sink.after_target_write": "raise"}),
        pytest.raises(RuntimeError, match="interrupted by InjectedFault") as raised,
    ):
        early(reading(spark, second_batch), 1)
    # the sink fails the batch with an Exception, which Py4J answers (decision 1350's replay)
    assert isinstance(raised.value.__cause__, InjectedFault)
    appended = latest_version(spark, bronze)

    late(reading(spark, second_batch), 1)

    assert latest_version(spark, bronze) == appended
    assert bronze_rows(spark, bronze) == sorted(
        with_batch(first_batch, 0) + with_batch(second_batch, 1)
    )
    row = batch_rows(facts_rows(spark, facts))[1]
    assert (row["batch_id"], row["rows"], row["inserts"], row["updates"], row["deletes"]) == (
        1,
        3,
        1,
        1,
        1,
    )
    assert (row["min_lsn"], row["max_lsn"]) == (lsn(2), lsn(3))


def test_rewound_checkpoint_raises(spark: SparkSession, paths: tuple[str, str, Path]) -> None:
    bronze, facts, metrics = paths
    first = delta_sink(bronze, "orders", facts, metrics_path=str(metrics))

    def batch(n: int, end: int | None = None) -> Any:
        ranges = [range_metrics(n + 1, end or n + 1, rows=1)]
        return reading(spark, [change(n + 1, 2, n, "x")], metrics_dir=metrics, ranges=ranges)

    for n in range(3):
        first(batch(n), n)
    bronze_version, facts_version = latest_version(spark, bronze), latest_version(spark, facts)

    for sink in (first, delta_sink(bronze, "orders", facts, metrics_path=str(metrics))):
        with pytest.raises(ValueError, match="rewound") as raised:
            sink(batch(0), 0)
        assert "batch 0 arrived, facts hold batches up to 2" in str(raised.value)
    # a new checkpoint whose first batch id equals the last recorded one, over other offsets
    with pytest.raises(ValueError, match="rewound"):
        delta_sink(bronze, "orders", facts, metrics_path=str(metrics))(batch(2, end=7), 2)

    delta_sink(bronze, "orders", facts, metrics_path=str(metrics))(batch(2), 2)  # a true replay
    assert (latest_version(spark, bronze), latest_version(spark, facts)) == (
        bronze_version,
        facts_version,
    )
    assert [r["batch_id"] for r in batch_rows(facts_rows(spark, facts))] == [0, 1, 2]


def test_dead_attempt_metrics_are_not_folded(
    spark: SparkSession, paths: tuple[str, str, Path]
) -> None:
    bronze, facts, metrics = paths
    metrics.mkdir()
    stale = range_metrics(1, 3, rows=3, bytes_=10**12, seconds=999.0)  # a dead attempt's
    (metrics / "range-stale.json").write_text(json.dumps(stale))
    (metrics / "event-schema_change-torn.json").write_text("{not json")
    (metrics / "_backfill").mkdir()  # a subdirectory is never read or removed
    rows = [change(1, 2, 1, "a"), change(3, 2, 2, "b")]
    live = [range_metrics(1, 3, rows=2, bytes_=2_500_000, seconds=0.4)]

    delta_sink(bronze, "orders", facts, metrics_path=str(metrics))(
        reading(spark, rows, metrics_dir=metrics, ranges=live), 0
    )

    (row,) = facts_rows(spark, facts)
    assert (row["read_mb"], row["read_seconds"], row["event"]) == (2.5, 0.4, None)
    assert [p.name for p in metrics.iterdir()] == ["_backfill"]


def test_events_land_in_the_batch_commit_once(
    spark: SparkSession, paths: tuple[str, str, Path]
) -> None:
    bronze, facts, metrics = paths
    ddl = {"capture_instance": "dbo_orders", "ddl": "ALTER TABLE dbo.orders ADD note INT"}
    switch = {"old": "dbo_orders", "new": "dbo_orders_v2", "uncaptured": ["fax"]}
    certain = {"from": lsn(2), "to": lsn(4), "certain": True, "capture_instance": "dbo_orders"}
    reason = "CDC cleanup raised min_lsn past the range start during the read"
    possible = {
        "from": lsn(7),
        "to": lsn(8),
        "certain": False,
        "reason": reason,
        "capture_instance": "dbo_orders_v2",
    }
    planned = [
        (event_record("schema_change", 5, ddl), lsn(5)),
        (
            event_record("capture_instance_switched", 6, switch, capture_instance="dbo_orders_v2"),
            lsn(6),
        ),
        (event_record("data_skipped", 4, certain, lost_from=at(1), lost_to=at(4)), lsn(2)),
    ]
    task_event = event_record(
        "data_skipped",
        8,
        possible,
        capture_instance="dbo_orders_v2",
        lost_from=at(1),
        lost_to=at(8),
    )
    rows = [change(4, 2, 1, "a"), change(7, 2, 2, "b"), change(8, 2, 3, "c")]

    def run_batch() -> None:
        for record, name_lsn in planned:  # planning (re)writes its event files first
            write_event_file(metrics, record, name_lsn)
        ranges = [range_metrics(2, 8, rows=3, events=[task_event])]
        sink = delta_sink(bronze, "orders", facts, metrics_path=str(metrics))
        sink(reading(spark, rows, metrics_dir=metrics, ranges=ranges), 3)

    with (
        failpoints({"sink.after_facts_write": "raise"}),
        pytest.raises(RuntimeError, match="interrupted by InjectedFault") as raised,
    ):
        run_batch()
    assert isinstance(raised.value.__cause__, InjectedFault)
    assert len(list(metrics.iterdir())) == 4  # three event files and the range file stay
    version = latest_version(spark, facts)
    run_batch()  # Spark replays the batch: the reader rewrites its files, nothing is written

    assert latest_version(spark, facts) == version
    found = facts_rows(spark, facts)
    before = spark.read.format("delta").option("versionAsOf", version - 1).load(facts).count()
    assert (len(found), before) == (5, 0)  # batch row and events came in one commit
    events = sorted(
        (
            r["event"],
            r["batch_id"],
            r["rows"],
            r["min_lsn"],
            r["max_lsn"],
            r["min_commit_ts"],
            r["lost_from_ts"],
            r["lost_to_ts"],
            json.loads(r["detail"]),
            r["app_id"],
        )
        for r in found
        if r["event"] is not None
    )
    assert events == [
        ("capture_instance_switched", 3, 0, lsn(6), lsn(6), at(6), None, None, switch, "orders"),
        ("data_skipped", 3, 0, lsn(4), lsn(4), at(4), at(1), at(4), certain, "orders"),
        ("data_skipped", 3, 0, lsn(8), lsn(8), at(8), at(1), at(8), possible, "orders"),
        ("schema_change", 3, 0, lsn(5), lsn(5), at(5), None, None, ddl, "orders"),
    ]
    assert list(metrics.iterdir()) == []

    # a file an earlier batch failed to remove is not recorded a second time
    write_event_file(metrics, planned[0][0], planned[0][1])
    delta_sink(bronze, "orders", facts, metrics_path=str(metrics))(
        reading(spark, [], metrics_dir=metrics, ranges=[range_metrics(9, 9, rows=0)]), 4
    )
    later = [r for r in facts_rows(spark, facts) if r["batch_id"] == 4]
    assert [r["event"] for r in later] == [None]


def test_bronze_schema_evolves_but_never_retypes(
    spark: SparkSession, paths: tuple[str, str, Path]
) -> None:
    bronze, facts, metrics = paths
    sink = delta_sink(bronze, "orders", facts, metrics_path=str(metrics))
    sink(reading(spark, [change(1, 2, 1, "a")]), 0)
    wider = StructType([*STREAM.fields, StructField("note", StringType())])
    sink(reading(spark, [(*change(2, 2, 2, "b"), "new")], schema=wider), 1)

    table = spark.read.format("delta").load(bronze)
    assert table.schema["note"].dataType.simpleString() == "string"
    notes = sorted((r["id"], r["note"]) for r in table.select("id", "note").collect())
    assert notes == [(1, None), (2, "new")]
    version = latest_version(spark, bronze)

    retyped = StructType(
        [StructField("id", LongType()) if f.name == "id" else f for f in STREAM.fields]
    )
    skipped = event_record("data_skipped", 3, {"from": lsn(3), "to": lsn(3), "certain": True})
    planned = write_event_file(metrics, skipped, lsn(3))
    with pytest.raises(SchemaChangedError) as raised:
        sink(reading(spark, [change(3, 2, 3, "c")], schema=retyped), 2)
    message = str(raised.value)
    assert "column id is int in the table but bigint" in message
    assert "delta.enableTypeWidening" in message
    assert latest_version(spark, bronze) == version
    found = sorted((r["batch_id"], r["event"] or "") for r in facts_rows(spark, facts))
    assert found == [(0, ""), (1, "")]
    assert planned.exists()  # kept for the replay once the owner fixed the table


def test_without_facts_the_sink_warns_once_and_still_cleans_the_directory(
    spark: SparkSession, paths: tuple[str, str, Path], caplog: pytest.LogCaptureFixture
) -> None:
    bronze, facts, metrics = paths
    ddl = {"capture_instance": "dbo_orders", "ddl": "ALTER TABLE dbo.orders ADD note INT"}
    sink = delta_sink(bronze, "orders", metrics_path=str(metrics))

    with caplog.at_level(logging.WARNING, logger="mssql_cdc.sink.writer"):
        for batch_id in range(2):  # the tasks' metrics files never reach this directory
            write_event_file(metrics, event_record("schema_change", batch_id + 1, ddl), lsn(1))
            sink(reading(spark, [change(batch_id + 1, 2, batch_id, "x")]), batch_id)

    messages = [r.getMessage() for r in caplog.records]
    assert sum("events need a facts table" in m for m in messages) == 1
    assert sum("not shared between the executors and the driver" in m for m in messages) == 1
    assert list(metrics.iterdir()) == []
    assert [r[-1] for r in bronze_rows(spark, bronze)] == [0, 1]
    assert not DeltaTable.isDeltaTable(spark, facts)


def test_headroom_and_lags_are_exact(spark: SparkSession, paths: tuple[str, str, Path]) -> None:
    bronze, facts, metrics = paths
    end = datetime(2026, 10, 1, 12, 0, 10)
    watermark = datetime(2026, 9, 28, 14, 3, 12, 117_000)
    source_max = datetime(2026, 10, 1, 12, 0, 22, 345_000)
    ranges = [
        range_metrics(1, 5, rows=2, bytes_=1_234_567, seconds=0.25, last=False, warnings=["w1"]),
        range_metrics(
            6,
            10,
            rows=1,
            bytes_=765_433,
            seconds=0.5,
            to_commit_ts=end,
            watermark=watermark,
            source_max=source_max,
            capture_lag=2.3,
            warnings=["w1", "w2"],
        ),
    ]
    rows = [change(1, 2, 1, "a"), change(3, 2, 2, "b"), change(9, 2, 3, "c")]

    delta_sink(bronze, "orders", facts, metrics_path=str(metrics))(
        reading(spark, rows, metrics_dir=metrics, ranges=ranges), 0
    )

    (row,) = facts_rows(spark, facts)
    # end - watermark = 2 days 21:56:57.883 = 69.94941 h; source_max - end = 12.345 s
    assert row["retention_headroom_hours"] == 69.95
    assert row["ingestion_lag_seconds"] == 12.345
    assert row["capture_lag_seconds"] == 2.3
    assert (row["end_lsn"], row["end_commit_ts"]) == (lsn(10), end)
    assert (row["read_seconds"], row["read_mb"]) == (0.75, 2.0)
    assert (row["retention_watermark_ts"], row["source_max_commit_ts"]) == (watermark, source_max)
    assert json.loads(row["detail"]) == {"warnings": ["w1", "w2"]}
    head = (source_max - watermark).total_seconds()  # 251830.228 s, the section 4.4 identity
    identity = 3600 * row["retention_headroom_hours"] + row["ingestion_lag_seconds"]
    assert abs(identity - head) <= 3600 * 0.005 + 0.0005


def test_a_streaming_query_writes_each_batch_through_the_sink(
    spark: SparkSession, paths: tuple[str, str, Path], tmp_path: Path
) -> None:
    bronze, facts, _ = paths
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    changes = [change(n, 2, n, f"v{n}") for n in range(1, 7)]
    for part in range(2):  # one file per micro-batch (maxFilesPerTrigger=1)
        lines = [
            json.dumps(dict(zip(STREAM.fieldNames(), row, strict=True)), default=datetime.isoformat)
            for row in changes[part * 3 : part * 3 + 3]
        ]
        written = inbox / f"part-{part}.json"
        written.write_text("\n".join(lines))
        os.utime(written, (1_700_000_000 + part, 1_700_000_000 + part))  # the file source's order
    stream = spark.readStream.schema(STREAM).option("maxFilesPerTrigger", 1).json(str(inbox))

    query = (
        stream.writeStream.foreachBatch(delta_sink(bronze, "files", facts))
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120)
    assert query.exception() is None

    ids = sorted(
        (r["_batch_id"], r["id"]) for r in spark.read.format("delta").load(bronze).collect()
    )
    assert ids == [(0, 1), (0, 2), (0, 3), (1, 4), (1, 5), (1, 6)]
    assert [(r["batch_id"], r["rows"]) for r in batch_rows(facts_rows(spark, facts))] == [
        (0, 3),
        (1, 3),
    ]
