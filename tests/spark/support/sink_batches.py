"""Micro-batches in the stream's output schema, read the way the source reads them.

`reading()` returns a DataFrame whose partitions, when Spark computes them, write their metrics
files into the metrics directory, as the reader's tasks do: a file exists only once the sink's
read ran, so the sink's clearing of dead attempts before the read cannot remove it.
Times are written by hand in the offset format; nothing here formats through the library.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import (
    IntegerType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
)

from mssql_cdc.core.metrics_files import event_file_name, range_file_name, write_json_atomic

STREAM = StructType(
    [
        StructField("_capture_instance", StringType()),
        StructField("_start_lsn", StringType()),
        StructField("_seqval", StringType()),
        StructField("_operation", IntegerType()),
        StructField("_command_id", IntegerType()),
        StructField("_commit_ts", TimestampNTZType()),
        StructField("id", IntegerType()),
        StructField("name", StringType()),
    ]
)
CI = "dbo_orders"
T0 = datetime(2026, 10, 1, 12, 0, 0)


def lsn(n: int) -> str:
    return f"0x{n:020X}"


def at(n: int) -> datetime:
    """Commit time of lsn(n): one second per LSN after T0."""
    return T0 + timedelta(seconds=n)


def text(t: datetime | None) -> str | None:
    return None if t is None else t.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]


def change(n: int, op: int, key: int, name: str | None, seq: int = 0) -> tuple[Any, ...]:
    """A change row of commit lsn(n) in the STREAM schema."""
    return (CI, lsn(n), lsn(n * 100 + seq), op, seq, at(n), key, name)


def range_metrics(
    from_n: int,
    to_n: int,
    *,
    rows: int,
    bytes_: int = 1000,
    seconds: float = 0.1,
    last: bool = True,
    to_commit_ts: datetime | None = None,
    watermark: datetime | None = None,
    source_max: datetime | None = None,
    capture_lag: float | None = None,
    warnings: list[str] | None = None,
    events: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A task's range metrics file (10-source.md 9.2), keys in the spec's order."""
    return {
        "kind": "range",
        "capture_instance": CI,
        "from_lsn": lsn(from_n),
        "to_lsn": lsn(to_n),
        "last": last,
        "batch_start_lsn": lsn(from_n - 1),
        "batch_end_lsn": lsn(to_n),
        "rows": rows,
        "bytes": bytes_,
        "seconds": seconds,
        "to_commit_ts": text(to_commit_ts or at(to_n)),
        "rtt_ms": 0.5,
        "network_wait_ms": 1.0,
        "retention_watermark_ts": text(watermark) if last else None,
        "source_max_lsn": lsn(to_n) if last else None,
        "source_max_commit_ts": text(source_max) if last else None,
        "capture_lag_seconds": capture_lag if last else None,
        "warnings": warnings or [],
        "events": events or [],
    }


def event_record(
    event: str,
    n: int,
    detail: dict[str, Any],
    *,
    capture_instance: str = CI,
    lost_from: datetime | None = None,
    lost_to: datetime | None = None,
) -> dict[str, Any]:
    """An event record at lsn(n) (10-source.md 9.3)."""
    return {
        "event": event,
        "capture_instance": capture_instance,
        "lsn": lsn(n),
        "commit_ts": text(at(n)),
        "detail": detail,
        "lost_from_ts": text(lost_from),
        "lost_to_ts": text(lost_to),
        "batch_start_lsn": lsn(1),
        "batch_end_lsn": lsn(n),
    }


def write_event_file(directory: Path, record: dict[str, Any], name_lsn: str) -> Path:
    """Planning's event file, named by its kind, instance and `name_lsn`."""
    name = event_file_name(record["event"], record["capture_instance"], name_lsn)
    assert write_json_atomic(directory, name, record)
    return directory / name


def reading(
    spark: SparkSession,
    rows: list[tuple[Any, ...]],
    *,
    schema: StructType = STREAM,
    metrics_dir: Path | None = None,
    ranges: list[dict[str, Any]] | None = None,
) -> DataFrame:
    """A batch of `rows` (all in partition 0); partition i writes `ranges[i]` when computed.

    Without `ranges` the batch is a local DataFrame, which Spark Connect builds too (it carries
    no RDD).
    """
    ranges = ranges or []
    if not ranges:
        return spark.createDataFrame(rows, schema).coalesce(1)
    parts = max(1, len(ranges))
    folder = None if metrics_dir is None else str(metrics_dir)

    def read(index: int, _: Any) -> Any:
        if folder is not None and index < len(ranges):
            payload = ranges[index]
            name = range_file_name(payload["from_lsn"], payload["to_lsn"])
            write_json_atomic(folder, name, payload)
        return iter(rows if index == 0 else [])

    partitions = spark.sparkContext.parallelize(range(parts), parts)
    return spark.createDataFrame(partitions.mapPartitionsWithIndex(read), schema)


def bronze_rows(spark: SparkSession, path: str) -> list[tuple[Any, ...]]:
    """Bronze as sorted tuples of the STREAM columns plus `_batch_id`."""
    frame = spark.read.format("delta").load(path)
    columns = [*STREAM.fieldNames(), "_batch_id"]
    return sorted(tuple(r) for r in frame.select(*columns).collect())


def facts_rows(spark: SparkSession, path: str) -> list[dict[str, Any]]:
    frame = spark.read.format("delta").load(path)
    return [r.asDict() for r in frame.collect()]


def _commits(path: str) -> dict[int, dict[str, Any]]:
    """Each commit's `commitInfo` action, read from the table's Delta log files by hand."""
    found: dict[int, dict[str, Any]] = {}
    for file in (Path(path) / "_delta_log").glob("*.json"):
        if file.stem.isdigit():
            actions = [json.loads(line) for line in file.read_text().splitlines() if line]
            found[int(file.stem)] = next(a["commitInfo"] for a in actions if "commitInfo" in a)
    return found


def latest_version(spark: SparkSession, path: str) -> int:
    """The newest version in the table's Delta log (`spark` unused: the log is read by hand)."""
    return max(_commits(path))


def commit_metadata(spark: SparkSession, path: str, version: int) -> dict[str, Any]:
    """The userMetadata JSON of commit `version`, from the Delta log file."""
    return dict(json.loads(_commits(path)[version]["userMetadata"]))
