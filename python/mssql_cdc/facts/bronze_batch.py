"""A micro-batch's facts row from what bronze holds (decision 1423).

A driver killed between a batch's bronze append and its facts commit leaves the batch in bronze
without its facts row. The next run's replay writes it, but only by reading the batch from the
source again; when CDC cleanup purged the batch's range first, that read fails, and a recovery
that opens the next generation never replays the old one's batch at all. Bronze still holds the
batch's rows: the commit its `userMetadata` names (`{"batch_id", "app_id", "generation"}`) added
exactly them. Their aggregates follow the sink's rules (sink step 5, docs/tables.md): `rows`
every row, the range of `_start_lsn` and of `_commit_ts`, and the counts of `_operation` 1, 2 and
4. A path table is read in this process (the commit's files, by deltalake); another is read by
one Spark aggregate over the commit's files.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import TYPE_CHECKING, Any

from mssql_cdc.core import EventRecord, Operation, read_batch_files
from mssql_cdc.facts.keys import facts_key, sink_id
from mssql_cdc.facts.metrics import fold_metrics
from mssql_cdc.facts.rows import (
    BatchAggregates,
    append_facts,
    batch_facts_metadata,
    batch_row,
    last_batch,
    source_event_rows,
)
from mssql_cdc.facts.snapshot_family import now_naive
from mssql_cdc.options import open_folder
from mssql_cdc.tables import (
    TableOutOfReach,
    TableRef,
    commit_frame,
    find_commits,
    open_for_read,
    read_commit_rows,
    store_settings,
    txn_version,
)

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["aggregates_of_arrow", "bronze_batch_aggregates", "finish_batch_from_bronze"]

log = logging.getLogger("mssql_cdc.facts.bronze_batch")

COLUMNS = ("_start_lsn", "_operation", "_commit_ts")


def aggregates_of_arrow(rows: pa.Table) -> BatchAggregates:
    """The sink's step-5 aggregates of bronze rows (columns `_start_lsn`, `_operation`,
    `_commit_ts`); NULL values count in `rows` and in no range."""
    lsns = [v for v in rows.column("_start_lsn").to_pylist() if v is not None]
    times: list[datetime] = [v for v in rows.column("_commit_ts").to_pylist() if v is not None]
    ops = rows.column("_operation").to_pylist()
    return BatchAggregates(
        rows=rows.num_rows,
        min_lsn=min(lsns, default=None),
        max_lsn=max(lsns, default=None),
        min_commit_ts=min(times, default=None),
        max_commit_ts=max(times, default=None),
        deletes=ops.count(Operation.DELETE),
        inserts=ops.count(Operation.INSERT),
        updates=ops.count(Operation.UPDATE_AFTER),
    )


def bronze_batch_aggregates(
    spark: SparkSession, bronze: TableRef, sink: str, batch_id: int
) -> BatchAggregates | None:
    """The aggregates of the rows bronze's commit of micro-batch `batch_id` of sink id `sink`
    added; None when bronze holds no such commit, or its files are out of every reach (a log
    or VACUUM removed them)."""
    commits = find_commits(
        spark, bronze, lambda m: m.get("app_id") == sink and m.get("batch_id") == batch_id
    )
    if not commits:
        return None
    version = commits[0].version
    try:
        return aggregates_of_arrow(read_commit_rows(bronze, version, columns=COLUMNS))
    except TableOutOfReach as exc:
        log.debug("%s: commit %d is read through Spark: %s", bronze, version, exc)
    try:
        frame = commit_frame(spark, bronze, version)
    except TableOutOfReach as exc:
        log.warning("%s: the rows of commit %d are out of reach: %s", bronze, version, exc)
        return None
    return _spark_aggregates(frame)


def _spark_aggregates(frame: DataFrame) -> BatchAggregates:
    from pyspark.sql import functions as F

    op = F.col("_operation")
    values: dict[str, Any] = (
        frame.agg(
            F.count(F.lit(1)).alias("rows"),
            F.min("_start_lsn").alias("min_lsn"),
            F.max("_start_lsn").alias("max_lsn"),
            F.min("_commit_ts").alias("min_commit_ts"),
            F.max("_commit_ts").alias("max_commit_ts"),
            F.count(F.when(op == Operation.DELETE, 1)).alias("deletes"),
            F.count(F.when(op == Operation.INSERT, 1)).alias("inserts"),
            F.count(F.when(op == Operation.UPDATE_AFTER, 1)).alias("updates"),
        )
        .collect()[0]
        .asDict()
    )
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


def finish_batch_from_bronze(
    spark: SparkSession,
    *,
    target: str,
    facts_table: str,
    app_id: str,
    generation: int,
    metrics_path: str | None,
) -> int | None:
    """Write the facts row of generation `generation`'s newest batch when bronze holds it and
    the facts table does not: its aggregates from bronze's rows of that batch, its metric
    columns and event rows from what the reader left in `metrics_path` (the folder the killed
    run's sink had not cleaned yet), under the batch's facts key (a row already written is
    not written again). Returns the batch id written, None when there was nothing to finish.
    """
    bronze = open_for_read(spark, target, "bronze")
    facts = open_for_read(spark, facts_table, "facts") if facts_table else None
    if bronze is None or facts is None:
        return None
    sink = sink_id(app_id, generation)
    appended = txn_version(spark, bronze.ref, sink)
    if appended is None:
        return None
    last = last_batch(spark, facts.ref, sink)
    if last is not None and last[0] >= appended:
        return None
    aggregates = bronze_batch_aggregates(spark, bronze.ref, sink, appended)
    if aggregates is None:
        log.warning(
            "%s: batch %d of %s is in bronze without its facts row, and bronze's commit of "
            "it cannot be read; the facts table stays without that row",
            target,
            appended,
            sink,
        )
        return None
    records: list[EventRecord] = []
    ranges: list[dict[str, Any]] = []
    if metrics_path:
        folder = open_folder(metrics_path, store_settings(spark, metrics_path))
        found = read_batch_files(metrics_path, folder)
        ranges, records = list(found.ranges), list(found.events)
    written_at = now_naive()
    row = batch_row(
        app_id=app_id,
        generation=generation,
        batch_id=appended,
        target=target,
        aggregates=aggregates,
        metrics=fold_metrics(ranges) if metrics_path else None,
        started_at=written_at,
        duration_ms=0,
        written_at=written_at,
    )
    events = source_event_rows(
        records,
        app_id=app_id,
        generation=generation,
        batch_id=appended,
        target=target,
        started_at=written_at,
        written_at=written_at,
    )
    append_facts(
        spark,
        facts.ref,
        [row, *events],
        key=facts_key(app_id, generation, appended),
        user_metadata=batch_facts_metadata(app_id=app_id, generation=generation, batch_id=appended),
    )
    log.warning(
        "%s: batch %d of %s was in bronze without its facts row (a run stopped between the "
        "two); its facts row is written from bronze's rows of it (%d rows)",
        target,
        appended,
        sink,
        aggregates.rows,
    )
    return appended
