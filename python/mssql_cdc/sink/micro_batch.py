"""The micro-batch as the sink receives it: its columns checked, its step-5 aggregates as
Spark columns (observed on the append, decision 1350), and the replay's reads of it.

A batch of the source that snapshots itself (snapshotMode) carries `_snapshot` already: the
sink keeps it, with bronze's meaning, and adds only `_batch_id` (decision 1427).

Nothing here caches the batch: a replay whose append Delta skips reads it once more, with the
aggregate job or, when the reader's counts cover it, a plain read (decision 0380).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mssql_cdc.core import Operation
from mssql_cdc.errors import ConfigError
from mssql_cdc.facts import BatchAggregates
from mssql_cdc.tables import TableRef

if TYPE_CHECKING:
    from collections.abc import Iterator

    import pyarrow as pa
    from pyspark.sql import Column, DataFrame

__all__ = ["aggregate", "aggregate_columns", "aggregates_of", "check_columns", "read_partitions"]

_REQUIRED = ("_start_lsn", "_operation", "_commit_ts")
_ADDED = ("_batch_id",)
# The source's own column with snapshotMode initial or when_needed: kept as the source set it.
_SOURCE_SNAPSHOT = "_snapshot"


def aggregate_columns(
    *, times_as_text: bool = False, rows_of: Column | None = None
) -> list[Column]:
    """The step-5 aggregates as named Spark aggregate columns: rows, LSN and commit-time
    ranges, and the counts of deletes (1), inserts (2) and update after-images (4).

    `rows_of` is a condition a row must meet to count in `rows` (default: every row); the
    stream's observed metric counts change rows only, not the rows of figures beside them.

    `times_as_text` gives the commit times as Spark's text of a TIMESTAMP_NTZ
    (`yyyy-MM-dd HH:mm:ss[.ffffff]`): a streaming progress carries no timestamp value on Spark
    Connect, whose server fails to write one into the progress's JSON."""
    from pyspark.sql import functions as F

    def time(column: Column) -> Column:
        return column.cast("string") if times_as_text else column

    op = F.col("_operation")
    return [
        F.count(F.lit(1) if rows_of is None else F.when(rows_of, 1)).alias("rows"),
        F.min("_start_lsn").alias("min_lsn"),
        F.max("_start_lsn").alias("max_lsn"),
        time(F.min("_commit_ts")).alias("min_commit_ts"),
        time(F.max("_commit_ts")).alias("max_commit_ts"),
        F.count(F.when(op == Operation.DELETE, 1)).alias("deletes"),
        F.count(F.when(op == Operation.INSERT, 1)).alias("inserts"),
        F.count(F.when(op == Operation.UPDATE_AFTER, 1)).alias("updates"),
    ]


def aggregates_of(values: Mapping[str, Any]) -> BatchAggregates:
    """The aggregates from the values of `aggregate_columns` (a row or an observation)."""
    return BatchAggregates(
        rows=int(values["rows"]),
        min_lsn=values["min_lsn"],
        max_lsn=values["max_lsn"],
        min_commit_ts=values["min_commit_ts"],
        max_commit_ts=values["max_commit_ts"],
        deletes=int(values["deletes"]),
        inserts=int(values["inserts"]),
        updates=int(values["updates"]),
    )


def aggregate(df: DataFrame) -> BatchAggregates:
    """The step-5 aggregates in one Spark job of their own (a replay's read)."""
    return aggregates_of(df.agg(*aggregate_columns()).collect()[0].asDict())


def check_columns(df: DataFrame, target: TableRef) -> None:
    """Before the sink's step 1: the batch holds the stream's columns and none of those the
    sink adds; a `_snapshot` column must be the source's, a STRING.

    Raises:
        ConfigError (a ValueError): naming the missing or clashing columns.
    """
    names = {name.lower() for name in df.columns}
    if _SOURCE_SNAPSHOT in names:
        kind = {n.lower(): t for n, t in df.dtypes}.get(_SOURCE_SNAPSHOT)
        if kind != "string":
            raise ConfigError(
                f"{target}: the micro-batch's column _snapshot is {kind}, not the string of "
                "the mssql_cdc source's snapshotMode stamp; drop or rename it before the sink"
            )
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


def read_partitions(df: DataFrame) -> int:
    """A replay's read as one job without a shuffle: read the batch to its end (its reader
    tasks write their metrics files) and return its partition count.

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
