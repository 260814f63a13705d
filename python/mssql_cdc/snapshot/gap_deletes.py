"""Deletes across a gap (docs/data-loss.md, 'Deletes across a gap'; decision 1140).

A re-snapshot at S restores the table's rows, but a key deleted while the stream could not read
(the gap) has no delete row in bronze: only a rebuild from the snapshot forgets it. With
`to_delta(..., gap_deletes=True)`, the step that completes the re-snapshot first appends one
delete change row at S for every key that bronze's latest image before S holds, that the
snapshot lacks and whose first change after S (if any) is an insert, so bronze read as a change
feed stays right. The rows are marked as derived by `_snapshot = S` (a change read from CDC has
NULL there) and appended under `A#gapdel.<S>`, version 0: a rerun after a crash writes them once.
The derived rows are read once, by their append, which observes their count: nothing is cached
(decision 1348). A time key of seven fractional digits held as a Spark time is refused before
anything is written: two keys 100 ns apart would be one key here (decision 1343).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from mssql_cdc.core import Operation, StreamOffset, check_time_keys
from mssql_cdc.facts import gap_deletes_key, snapshot_facts
from mssql_cdc.tables import (
    TableRef,
    append_idempotent,
    observe_aggregates,
    open_for_read,
    recorded_sql_types,
    table_ref,
    txn_version,
)
from mssql_cdc.testing import failpoint

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = ["previous_point", "write_gap_deletes"]

log = logging.getLogger(__name__)

# Changes that show the key existed just before them: it was in the table at S.
_EXISTED = (Operation.DELETE, Operation.UPDATE_BEFORE, Operation.UPDATE_AFTER)


def previous_point(s: str, wholes: Iterable[str], completions: Iterable[str]) -> str | None:
    """The rebuild point of bronze just before snapshot `s`: the highest whole snapshot or
    completion below it (the rebuild rule's P, taken before S), or None when there is none."""
    below = [p for p in (*wholes, *completions) if p < s]
    return max(below) if below else None


def _column(name: str) -> Column:
    from pyspark.sql import functions as F

    return F.col(f"`{name.replace('`', '``')}`")


def _order(frame: DataFrame, *, descending: bool) -> list[Column]:
    order = ("_start_lsn", "_command_id", "_seqval", "_operation")
    names = [n for n in order if n in frame.columns]
    if descending:  # apply order reversed: the last row of a key first
        return [_column(n).desc_nulls_last() for n in names]
    return [_column(n).asc_nulls_first() for n in names]


def _first(frame: DataFrame, keys: Sequence[str], *, last: bool) -> DataFrame:
    """One row per key: the first (or last) in apply order."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    window = Window.partitionBy(*[_column(k) for k in keys]).orderBy(
        *_order(frame, descending=last)
    )
    rank = "__mssql_cdc_rank"
    return frame.withColumn(rank, F.row_number().over(window)).where(F.col(rank) == 1).drop(rank)


def _without(frame: DataFrame, other: DataFrame, keys: Sequence[str]) -> DataFrame:
    """`frame`'s rows whose key `other` lacks, matched null-safely (a unique index may hold
    one NULL key)."""
    from pyspark.sql import functions as F

    # The right side's keys get new names: both sides read one bronze, and a condition over
    # columns of one lineage could resolve to the same attribute on both.
    names = [f"__mssql_cdc_key{i}" for i in range(len(keys))]
    right = other.select(
        *[_column(k).alias(n) for k, n in zip(keys, names, strict=True)]
    ).distinct()
    condition = None
    for k, n in zip(keys, names, strict=True):
        match = _column(k).eqNullSafe(F.col(n))
        condition = match if condition is None else condition & match
    return frame.join(right, condition, "left_anti")


def _wholes_below(bronze: DataFrame, s: str) -> list[str]:
    from pyspark.sql import functions as F

    point = F.coalesce(_column("_snapshot"), _column("_start_lsn"))
    rows = (
        bronze.where((_column("_operation") == Operation.SNAPSHOT) & _column("_chunk").isNull())
        .where(point < s)
        .agg(F.max(point).alias("p"))
        .collect()
    )
    return [str(rows[0]["p"])] if rows and rows[0]["p"] is not None else []


def derived_deletes(
    bronze: DataFrame,
    keys: Sequence[str],
    snapshot: StreamOffset,
    point: str | None,
    sql_types: Mapping[str, str] | None = None,
) -> DataFrame:
    """The derived delete rows of snapshot `snapshot`, in bronze's columns.

    `point`: the rebuild point before S (`previous_point`); None rebuilds from changes only.
    `sql_types`: the SQL types bronze records of its columns (`tables.recorded_sql_types`).

    Raises:
        ConfigError: a key column of seven fractional digits held as a Spark time, named with
            its SQL type (`core.check_time_keys`, from the types bronze's schema records).
    """
    check_time_keys("to_delta gap_deletes=True", keys, bronze.schema.fields, sql_types)
    from pyspark.sql import functions as F

    s = snapshot.lsn
    op, lsn, mark = _column("_operation"), _column("_start_lsn"), _column("_snapshot")
    read_from_cdc = (op != Operation.SNAPSHOT) & mark.isNull()
    changes_before = read_from_cdc & (op != Operation.UPDATE_BEFORE) & (lsn <= s)
    if point is None:
        before = changes_before
    else:
        rows_of_point = (op == Operation.SNAPSHOT) & (F.coalesce(mark, lsn) == point)
        before = rows_of_point | (changes_before & (lsn > point))
    image = _first(bronze.where(before), keys, last=True).where(op != Operation.DELETE)
    in_snapshot = bronze.where((op == Operation.SNAPSHOT) & (F.coalesce(mark, lsn) == s))
    after = _first(bronze.where(read_from_cdc & (lsn > s)), keys, last=False)
    existed_at_s = after.where(op.isin(*_EXISTED))
    gone = _without(_without(image, in_snapshot, keys), existed_at_s, keys)
    fields = {f.name: f.dataType for f in bronze.schema.fields}
    replaced: dict[str, object] = {
        "_start_lsn": s,
        "_seqval": None,
        "_operation": int(Operation.DELETE),
        "_command_id": None,
        "_commit_ts": snapshot.commit_ts or None,
        "_batch_id": None,
        "_snapshot": s,
        "_chunk": None,
    }
    return gone.select(
        *[
            F.lit(replaced[name]).cast(kind).alias(name) if name in replaced else _column(name)
            for name, kind in fields.items()
        ]
    )


def _stored(spark: SparkSession, ref: TableRef, s: str) -> int:
    """The derived deletes bronze holds for snapshot `s`: counted again, from bronze's newest
    version, only when the append's observation saw nothing (another run stored them first)."""
    op, mark = _column("_operation"), _column("_snapshot")
    return spark.table(ref.sql).where((op == Operation.DELETE) & (mark == s)).count()


def write_gap_deletes(
    spark: SparkSession,
    target: str,
    *,
    app_id: str,
    facts_table: str,
    snapshot: StreamOffset,
    keys: Sequence[str],
) -> int:
    """Append the derived deletes of the re-snapshot at `snapshot` to bronze, once.

    Call it after the snapshot's rows are in bronze and before its completion row, so a crash
    in between repeats it (and Delta skips the repeat: `A#gapdel.<S>`, version 0).

    Returns:
        The derived rows (0 when there are none, no key, or a rerun found them; those another
        run stored when its append came first).
    """
    from pyspark.sql import functions as F

    ref = table_ref(target, argument="target")
    if not keys:
        log.warning(
            "%s: the re-snapshot at %s has no key columns (no unique index and no "
            "snapshotKeys option), so no deletes across the gap can be derived",
            target,
            snapshot.lsn,
        )
        return 0
    key = gap_deletes_key(app_id, snapshot.lsn)
    if txn_version(spark, ref, key.app_id) is not None:
        return 0  # a rerun: this snapshot's deletes are stored already
    handle = open_for_read(spark, ref, "bronze")
    if handle is None:
        return 0  # nothing in bronze, so nothing before the snapshot to delete
    bronze = spark.table(handle.ref.sql)
    completions = [c.lsn.lsn for c in snapshot_facts(spark, facts_table, app_id).completions()]
    point = previous_point(snapshot.lsn, _wholes_below(bronze, snapshot.lsn), completions)
    recorded = recorded_sql_types(spark, handle.ref)
    rows = observe_aggregates(
        derived_deletes(bronze, keys, snapshot, point, recorded),
        "mssql_cdc_gap_deletes",
        F.count(F.lit(1)).alias("rows"),
    )
    # The append is the one read: its commit names the deletes without their
    # count, and a commit of none is kept too, so that a rerun finds the key and reads nothing.
    metadata = {"gap_deletes": key.app_id, "lsn": snapshot.lsn}
    append_idempotent(rows.frame, ref, key.app_id, key.version, metadata)
    observed = rows.values()
    count = (
        int(observed["rows"]) if observed is not None else _stored(spark, handle.ref, snapshot.lsn)
    )
    failpoint("snapshot.after_gap_deletes")
    log.info(
        "%s: %d keys deleted during the gap got a derived delete row at %s",
        target,
        count,
        snapshot.lsn,
    )
    return count
