"""The rows a repair writes itself: its plan, and its carried chunks, the tiles the reconcile
found equal, written from bronze's latest images as chunk rows at S without reading the source.
A carried key's chunk is found in SQL Server's order for the key types the repair recorded
(decisions 1331, 1332).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mssql_cdc.core import Operation, StreamOffset
from mssql_cdc.facts import (
    RepairDetail,
    append_facts,
    chunk_facts,
    now_naive,
    parse_time,
    snapchunks_key,
    snapplan_key,
    snapshot_chunk_row,
    snapshot_plan_row,
    wave_key,
)
from mssql_cdc.reconciliation.repair_job import RepairJob
from mssql_cdc.reconciliation.target_side import key_below
from mssql_cdc.tables import append_idempotent, table_ref, txn_version

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from mssql_cdc.facts import OpenFact

__all__ = ["write_carried_chunks", "write_repair_plan"]


def write_repair_plan(
    spark: SparkSession, job: RepairJob, opened: OpenFact, detail: RepairDetail
) -> None:
    """The repair's `snapshot_plan` row: the reconcile's tiles as chunks (stored once)."""
    now = now_naive()
    assert now is not None
    row = snapshot_plan_row(
        app_id=job.app_id,
        generation=opened.generation,
        target=job.target,
        commit_ts=parse_time(opened.s.commit_ts),
        detail={
            "snapshot": opened.s.lsn,
            "kind": detail["kind"],
            "keys": list(job.keys),
            "chunk_rows": 0,  # planned by the reconcile's tiles, not by a row count
            "chunks": detail["chunks"],
        },
        started_at=now,
        duration_ms=0,
        written_at=now,
    )
    append_facts(spark, job.facts_table, [row], key=snapplan_key(job.app_id, opened.s.lsn))


def write_carried_chunks(
    spark: SparkSession,
    job: RepairJob,
    opened: OpenFact,
    detail: RepairDetail,
    carried: Sequence[int],
) -> None:
    """Wave 0: the carried chunks' rows in one keyed bronze append, then their chunk rows in
    one keyed facts commit (counted from bronze, so a rerun after a crash between writes the
    same rows)."""
    from pyspark.sql import functions as F

    s = opened.s.lsn
    if any(c.carried for c in chunk_facts(spark, job.facts_table, job.app_id, s)):
        return
    ref = table_ref(job.target, argument="target")
    key = wave_key(job.app_id, s, 0)
    if txn_version(spark, ref, key.app_id) is None:
        rows = _carried_rows(
            spark.table(ref.sql), job.keys, opened.s, detail["chunks"], carried,
            detail.get("key_types", []),
        )  # fmt: skip
        metadata = {"backfill": key.app_id, "wave": 0, "lsn": s, "carried": list(carried)}
        append_idempotent(rows, ref, key.app_id, key.version, metadata)
    bronze = spark.table(ref.sql)
    counted = (
        bronze.where((F.col("_operation") == Operation.SNAPSHOT) & (F.col("_snapshot") == s))
        .where(F.col("_chunk").isin(list(carried)))
        .groupBy("_chunk")
        .count()
        .collect()
    )
    counts = {int(r["_chunk"]): int(r["count"]) for r in counted}
    now = now_naive()
    assert now is not None
    chunks = detail["chunks"]
    facts = [
        snapshot_chunk_row(
            app_id=job.app_id,
            generation=opened.generation,
            target=job.target,
            stamp_lsn=s,
            stamp_commit_ts=parse_time(opened.s.commit_ts),
            high_lsn=None,
            high_commit_ts=None,
            rows=counts.get(i, 0),
            read_seconds=None,
            read_mb=None,
            detail={
                "snapshot": s,
                "chunk": i,
                "wave": 0,
                "lo": chunks[i][0],
                "hi": chunks[i][1],
                "last": i == len(chunks) - 1,
                "carried": True,
            },
            started_at=None,
            written_at=now,
        )
        for i in carried
    ]
    append_facts(spark, job.facts_table, facts, key=snapchunks_key(job.app_id, s, 0))


def _carried_rows(
    bronze: DataFrame,
    keys: Sequence[str],
    s: StreamOffset,
    chunks: Sequence[Sequence[Any]],
    carried: Sequence[int],
    key_types: Sequence[str | None] = (),
) -> DataFrame:
    """Bronze's latest image of every live key of the carried chunks, as chunk rows at S.

    Rows of this snapshot and rows above S (a rerun's view) are left out, so the images are
    those the reconcile compared. A key's chunk is found in SQL Server's order for the key
    columns' types (`key_types`, recorded by the repair: a GUID by its byte groups, a
    character key by its collation)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    def c(name: str) -> Column:
        return F.col(f"`{name.replace('`', '``')}`")

    before = bronze.where(
        (c("_start_lsn") <= s.lsn) & (c("_snapshot").isNull() | (c("_snapshot") != s.lsn))
    )
    order = [
        n for n in ("_start_lsn", "_command_id", "_seqval", "_operation") if n in bronze.columns
    ]
    window = Window.partitionBy(*[c(k) for k in keys]).orderBy(
        *[c(n).desc_nulls_last() for n in order]
    )
    rank, chunk = "__mssql_cdc_rank", "__mssql_cdc_chunk"
    key_columns = [c(k) for k in keys]
    # Chunks tile the key space in order: a key's chunk is how many chunk starts it is at or above.
    number: Column = F.lit(0)
    for lo, _ in chunks[1:]:
        number = number + (~key_below(key_columns, _bound(lo), key_types)).cast("int")
    latest = (
        before.withColumn(rank, F.row_number().over(window))
        .where(F.col(rank) == 1)
        .where(~c("_operation").isin(int(Operation.DELETE), int(Operation.UPDATE_BEFORE)))
        .withColumn(chunk, number)
        .where(F.col(chunk).isin(list(carried)))
    )
    replaced: dict[str, Column] = {
        "_start_lsn": F.lit(s.lsn),
        "_seqval": F.lit(None),
        "_operation": F.lit(int(Operation.SNAPSHOT)),
        "_command_id": F.lit(None),
        "_commit_ts": F.lit(s.commit_ts or None),
        "_batch_id": F.lit(None),
        "_snapshot": F.lit(s.lsn),
        "_chunk": F.col(chunk),
    }
    return latest.select(
        *[
            replaced[f.name].cast(f.dataType).alias(f.name) if f.name in replaced else c(f.name)
            for f in bronze.schema.fields
        ]
    )


def _bound(value: Any) -> Any:
    """A chunk bound as the tile comparison takes it: a tuple for a composite key."""
    return tuple(value) if isinstance(value, list) else value
