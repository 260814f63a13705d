"""The control table as silver reads and writes it (spec 20, section 7.1).

Stand-in for the shared `mssql_cdc.finalization` and `mssql_cdc.tables` modules being written on
another branch: when the branches merge, creation and the retried MERGE give way to them.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TypeVar

from mssql_cdc.silver._tables import Column, check_kind, create_table, delta_table, table_exists

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["COLUMNS", "ControlRow", "Position", "ensure_control", "read_control", "write_silver"]

# Migrations 1 silver_position, 2 open_snapshots, 3 loss_gap_verdict (spec 20, section 6).
SCHEMA_VERSION = 3
COMMENT = "mssql_cdc control: completeness verdict and silver position, one row per table"
COLUMNS = (
    Column("table_name", "STRING", "Exact table string passed to advance, or the silver target"),
    Column(
        "finalized_until",
        "TIMESTAMP_NTZ",
        "UTC verdict: every period ending at or before it is complete; never decreases. Over a "
        "loss gap it means nothing more will arrive, not that the gap's changes are in the table",
    ),
    Column("end_lsn", "STRING", "End offset LSN that last moved the verdict"),
    Column("end_commit_ts", "TIMESTAMP_NTZ", "UTC commit time of end_lsn"),
    Column("updated_at", "TIMESTAMP_NTZ", "UTC time of the last write of the row"),
    Column("applied_lsn", "STRING", "Silver: highest bronze change LSN applied"),
    Column("snapshot_lsn", "STRING", "Silver: LSN of the snapshot it was last rebuilt from"),
    Column(
        "open_snapshot_lsn",
        "STRING",
        "Silver: S of the open chunked snapshot whose waves are being applied, else NULL",
    ),
    Column("snapshot_wave", "INT", "Silver: last wave of that snapshot applied, else NULL"),
)

_CONFLICTS = (
    "ConcurrentAppendException",
    "ConcurrentDeleteReadException",
    "ConcurrentDeleteDeleteException",
    "MetadataChangedException",
    "ProtocolChangedException",
    "ConcurrentTransactionException",
)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ControlRow:
    """One table's control row; every field None when the row is missing."""

    finalized_until: datetime | None = None
    end_lsn: str | None = None
    end_commit_ts: datetime | None = None
    applied_lsn: str | None = None
    snapshot_lsn: str | None = None
    open_snapshot_lsn: str | None = None
    snapshot_wave: int | None = None


@dataclass(frozen=True, slots=True)
class Position:
    """Where silver stands in bronze: the columns apply_changes owns in its control row."""

    applied_lsn: str | None
    snapshot_lsn: str | None
    open_snapshot_lsn: str | None
    snapshot_wave: int | None


def ensure_control(spark: SparkSession, ref: str) -> None:
    if table_exists(spark, ref):
        check_kind(spark, ref, "control", "control_table")
        return
    create_table(
        spark, ref, COLUMNS, comment=COMMENT, kind="control", schema_version=SCHEMA_VERSION
    )


def read_control(spark: SparkSession, ref: str, *names: str) -> list[ControlRow]:
    """The control rows of `names`, in one read; all None where the table or a row is missing."""
    if not table_exists(spark, ref):
        return [ControlRow() for _ in names]
    check_kind(spark, ref, "control", "control_table")
    df = delta_table(spark, ref).toDF()
    present = [n for n in ControlRow.__dataclass_fields__ if n in df.columns]
    found = {
        r["table_name"]: ControlRow(**{n: r[n] for n in present})
        for r in df.where(df["table_name"].isin(*names)).select("table_name", *present).collect()
    }
    return [found.get(name, ControlRow()) for name in names]


def write_silver(
    spark: SparkSession,
    ref: str,
    table_name: str,
    position: Position,
    verdict: ControlRow | None,
) -> None:
    """Store silver's position, and move its verdict to `verdict`'s when that is newer.

    One MERGE on `table_name`; the verdict never moves back (GREATEST), and concurrent commits
    by writers of other rows are retried as `advance` retries them.
    """
    from pyspark.sql import functions as F

    now = datetime.now(UTC).replace(tzinfo=None)
    v = verdict or ControlRow()
    values = (
        table_name,
        v.finalized_until,
        v.end_lsn,
        v.end_commit_ts,
        now,
        position.applied_lsn,
        position.snapshot_lsn,
        position.open_snapshot_lsn,
        position.snapshot_wave,
    )
    schema = ", ".join(f"{c.name} {c.type}" for c in COLUMNS)
    source = spark.createDataFrame([values], schema)
    newer = (
        "s.finalized_until IS NOT NULL AND "
        "(t.finalized_until IS NULL OR s.finalized_until > t.finalized_until)"
    )
    verdict_set = {
        name: F.expr(f"CASE WHEN {newer} THEN s.{name} ELSE t.{name} END")
        for name in ("finalized_until", "end_lsn", "end_commit_ts")
    }
    owned = ("updated_at", "applied_lsn", "snapshot_lsn", "open_snapshot_lsn", "snapshot_wave")
    position_set = {name: F.col(f"s.{name}") for name in owned}

    def merge() -> None:
        (
            delta_table(spark, ref)
            .alias("t")
            .merge(source.alias("s"), "t.table_name = s.table_name")
            .whenMatchedUpdate(set={**verdict_set, **position_set})
            .whenNotMatchedInsertAll()
            .execute()
        )

    _retry_conflicts(merge)


def _retry_conflicts(action: Callable[[], T]) -> T:
    """Run `action`, retrying Delta concurrent-commit errors with jittered backoff for 60 s."""
    deadline = time.monotonic() + 60.0
    delay = 0.5
    while True:
        try:
            return action()
        except Exception as exc:
            text = f"{type(exc).__name__}: {exc}"
            if not any(name in text for name in _CONFLICTS) or time.monotonic() >= deadline:
                raise
        time.sleep(delay * random.uniform(0.5, 1.0))
        delay = min(delay * 2, 8.0)
