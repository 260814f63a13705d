"""The Spark read of a snapshot: the `mssql_cdc_snapshot` format at a recorded stamp.

Snapshots take the stream's parsed `SourceConfig`; the format takes text options, so they are
written back here from the config (the same values the caller gave, in their canonical form).
The reader never adds bronze's `_snapshot` (callers set it); it adds `_chunk` only for
`snapshotChunks` (docs/source.md, 'Snapshots').
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from mssql_cdc.facts.details import json_key
from mssql_cdc.options.config import SourceConfig

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["SNAPSHOT_FORMAT", "read_chunks", "read_whole", "reader_options"]

SNAPSHOT_FORMAT = "mssql_cdc_snapshot"


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def reader_options(config: SourceConfig) -> dict[str, str]:
    """The text options of the snapshot reader for `config` (no stamp, no chunks)."""
    options: dict[str, str] = {
        "captureInstance": config.capture_instance,
        "backend": config.backend,
        "connectTimeout": str(config.connect_timeout),
        "includeCommandId": "true" if config.include_command_id else "false",
        "arrowBatchSize": str(config.arrow_batch_size),
        "sourceTimeZone": config.source_time_zone,
        "schemaChangePolicy": config.schema_change_policy,
        "isolationLevel": config.isolation_level,
        "failOnDataLoss": "true" if config.fail_on_data_loss else "false",
    }
    if config.connection_string is not None:
        options["connectionString"] = config.connection_string.text
    if config.emulator_path is not None:
        options["emulatorPath"] = config.emulator_path
    if config.num_partitions is not None:
        options["numPartitions"] = str(config.num_partitions)
    if config.columns is not None:
        options["columns"] = ", ".join(f"{_quoted(c.name)} {c.spark_type}" for c in config.columns)
    if config.snapshot_keys is not None:
        options["snapshotKeys"] = json.dumps(list(config.snapshot_keys))
    if config.lock_timeout_ms is not None:
        options["lockTimeoutMs"] = str(config.lock_timeout_ms)
    return options


def _reader(spark: SparkSession, config: SourceConfig, stamp: str, **extra: str) -> DataFrame:
    import mssql_cdc

    # register(spark) is the package's entry point for both formats; it is idempotent.
    register = getattr(mssql_cdc, "register", None)
    if register is not None:
        register(spark)
    return (
        spark.read.format(SNAPSHOT_FORMAT)
        .options(**reader_options(config))
        .options(**extra)
        .option("snapshotLsn", stamp)
        .load()
    )


def read_whole(spark: SparkSession, config: SourceConfig, stamp: str) -> DataFrame:
    """The whole table stamped `stamp`, with `_snapshot = stamp` (a whole snapshot's rows)."""
    from pyspark.sql import functions as F

    return _reader(spark, config, stamp).withColumn("_snapshot", F.lit(stamp))


def read_chunks(
    spark: SparkSession,
    config: SourceConfig,
    stamp: str,
    snapshot: str,
    chunks: Sequence[tuple[int, object, object]],
    *,
    metrics_path: str,
) -> DataFrame:
    """The given `[chunk, lo, hi]` ranges stamped `stamp`, with `_snapshot = snapshot`; the
    reader adds `_chunk` and leaves `chunk-<i>.json` under `metrics_path`."""
    from pyspark.sql import functions as F

    text = json.dumps([[i, json_key(lo), json_key(hi)] for i, lo, hi in chunks])
    frame = _reader(spark, config, stamp, snapshotChunks=text, metricsPath=metrics_path)
    columns = [c for c in frame.columns if c != "_chunk"]
    return frame.select(*columns, F.lit(snapshot).alias("_snapshot"), F.col("_chunk"))
