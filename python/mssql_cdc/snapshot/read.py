"""The Spark read of a snapshot: the `mssql_cdc_snapshot` format at a recorded stamp.

Snapshots take the stream's parsed `SourceConfig`; the format takes text options, so they are
written back from the config by `SourceConfig.to_options` (decision 0450).
The reader never adds bronze's `_snapshot` (callers set it); it adds `_chunk` only for
`snapshotChunks` (docs/source.md, 'Snapshots').
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from mssql_cdc.core import lsn
from mssql_cdc.facts import json_key
from mssql_cdc.options import SnapshotChunk, SourceConfig, parse_chunks

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["SNAPSHOT_FORMAT", "read_chunks", "read_config", "read_whole"]

SNAPSHOT_FORMAT = "mssql_cdc_snapshot"


def read_config(
    config: SourceConfig,
    stamp: str,
    *,
    chunks: tuple[SnapshotChunk, ...] | None = None,
    metrics_path: str | None = None,
) -> SourceConfig:
    """The config of one snapshot read of `config`'s source: at `stamp`, of `chunks` (None: the
    whole table), with chunk metrics under `metrics_path`.

    The stream's start, batch limit, duration guard and metrics folder are not the read's:
    they are reset to the options' defaults, as if never given.
    """
    return replace(
        config,
        starting_lsn="earliest",
        max_commits_per_batch=None,
        metrics_path=metrics_path,
        snapshot_lsn=lsn.normalize(stamp),
        snapshot_chunks=chunks,
        snapshot_duration_guard="warn",
    )


def _reader(spark: SparkSession, config: SourceConfig) -> DataFrame:
    # What the package's register(spark) runs: both formats, idempotently. Taken from the
    # source rather than the package root, which imports the snapshots back for its lazy names.
    from mssql_cdc.source import register

    register(spark)
    return spark.read.format(SNAPSHOT_FORMAT).options(**config.to_options()).load()


def read_whole(
    spark: SparkSession, config: SourceConfig, stamp: str, *, progress_path: str | None = None
) -> DataFrame:
    """The whole table stamped `stamp`, with `_snapshot = stamp` (a whole snapshot's rows);
    with `progress_path`, the reader's tasks leave `progress-<n>.json` there as they read."""
    from pyspark.sql import functions as F

    read = read_config(config, stamp, metrics_path=progress_path)
    return _reader(spark, read).withColumn("_snapshot", F.lit(stamp))


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

    # parse_chunks checks the bounds as the format would, and gives the config's values.
    parsed = parse_chunks(json.dumps([[i, json_key(lo), json_key(hi)] for i, lo, hi in chunks]))
    read = read_config(config, stamp, chunks=parsed, metrics_path=metrics_path)
    frame = _reader(spark, read)
    columns = [c for c in frame.columns if c != "_chunk"]
    return frame.select(*columns, F.lit(snapshot).alias("_snapshot"), F.col("_chunk"))
