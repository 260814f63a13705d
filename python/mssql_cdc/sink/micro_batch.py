"""The micro-batch as the sink receives it: its columns checked, cached once, counted by one
Spark job when the reader's counts do not cover it (docs/sink.md, decision 0380).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mssql_cdc.core import Operation
from mssql_cdc.errors import ConfigError, MssqlCdcError
from mssql_cdc.facts import BatchAggregates
from mssql_cdc.tables import TableRef

if TYPE_CHECKING:
    from collections.abc import Iterator

    import pyarrow as pa
    from pyspark.sql import DataFrame

__all__ = ["aggregate", "check_columns", "persist", "read_into_cache"]

# The cached batch is Spark's compressed column batches already; kept deserialized, the block
# manager does not copy them through a serializer on the way in and out.
STORAGE_LEVEL = "MEMORY_AND_DISK_DESER"

_REQUIRED = ("_start_lsn", "_operation", "_commit_ts")
_ADDED = ("_batch_id", "_snapshot")


def aggregate(df: DataFrame) -> BatchAggregates:
    """Step 5 of the sink's batch, the aggregate: rows, LSN and commit-time ranges and
    operation counts, in one Spark job."""
    from pyspark.sql import functions as F

    op = F.col("_operation")
    row = df.agg(
        F.count(F.lit(1)).alias("rows"),
        F.min("_start_lsn").alias("min_lsn"),
        F.max("_start_lsn").alias("max_lsn"),
        F.min("_commit_ts").alias("min_commit_ts"),
        F.max("_commit_ts").alias("max_commit_ts"),
        F.count(F.when(op == Operation.DELETE, 1)).alias("deletes"),
        F.count(F.when(op == Operation.INSERT, 1)).alias("inserts"),
        F.count(F.when(op == Operation.UPDATE_AFTER, 1)).alias("updates"),
    ).collect()[0]
    return BatchAggregates(
        rows=int(row["rows"]),
        min_lsn=row["min_lsn"],
        max_lsn=row["max_lsn"],
        min_commit_ts=row["min_commit_ts"],
        max_commit_ts=row["max_commit_ts"],
        deletes=int(row["deletes"]),
        inserts=int(row["inserts"]),
        updates=int(row["updates"]),
    )


def check_columns(df: DataFrame, target: TableRef) -> None:
    """Before the sink's step 1: the batch holds the stream's columns and none of those the
    sink adds.

    Raises:
        ConfigError (a ValueError): naming the missing or clashing columns.
    """
    names = {name.lower() for name in df.columns}
    missing = [name for name in _REQUIRED if name not in names]
    if missing:
        raise ConfigError(
            f"{target}: the micro-batch lacks the stream's column(s) {', '.join(missing)}; "
            "foreachBatch(delta_sink(...)) expects the output of the mssql_cdc source"
        )
    clashing = [name for name in _ADDED if name in names]
    if clashing:
        raise ConfigError(
            f"{target}: the micro-batch already has the column(s) {', '.join(clashing)}, which "
            "the sink adds; drop or rename them before the sink"
        )


def persist(df: DataFrame, target: TableRef) -> DataFrame:
    """Step 4 of the sink's batch: cache it once, so the aggregate job and the append read it
    once."""
    from pyspark.storagelevel import StorageLevel

    try:
        return df.persist(getattr(StorageLevel, STORAGE_LEVEL))
    except Exception as exc:  # any refusal means the same thing; re-raised with the remedy
        raise MssqlCdcError(
            f"{target}: this platform refuses to cache the micro-batch (persist failed: {exc}); "
            "the sink reads each batch from its cache and cannot run here. Run the stream on "
            "a cluster that allows caching"
        ) from exc


def read_into_cache(df: DataFrame) -> int:
    """The sink's step 5 as one job without a shuffle: read the cached batch to its end (its
    reader tasks write their metrics files, the cache fills) and return its partition count.

    Each partition answers one row, empty ones too, so the count holds on classic and Spark
    Connect sessions alike (Connect has no RDDs to ask); only a literal column reaches Python.
    """
    from pyspark.sql import functions as F

    return len(df.select(F.lit(1).alias("one")).mapInArrow(_one_row, "one INT").collect())


def _one_row(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    import pyarrow as pa

    for _ in batches:
        pass  # the partition is read to its end: its task finishes and its metrics file lands
    yield pa.RecordBatch.from_pydict({"one": pa.array([1], pa.int32())})
