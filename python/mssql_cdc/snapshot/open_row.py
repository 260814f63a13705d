"""The `snapshot_open` row that opens a full or chunked snapshot (docs/snapshots.md)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from mssql_cdc.core import StreamOffset
from mssql_cdc.facts import (
    SnapshotOpenDetail,
    TxnKey,
    append_facts,
    now_naive,
    parse_time,
    snapshot_open_row,
)
from mssql_cdc.tables import ensure_table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["append_open"]


def append_open(
    spark: SparkSession,
    facts_table: str,
    *,
    app_id: str,
    target: str,
    at: StreamOffset,
    detail: SnapshotOpenDetail,
    started: datetime,
    key: TxnKey | None,
) -> None:
    """Append the open row of the snapshot at `at` that `detail` describes, in one commit under
    the transaction `key` (None: none), creating or migrating the facts table first."""
    row = snapshot_open_row(
        app_id=app_id,
        target=target,
        lsn=at.lsn,
        commit_ts=parse_time(at.commit_ts),
        detail=detail,
        started_at=parse_time(started),
        written_at=now_naive(),
    )
    ensure_table(spark, facts_table, "facts")
    append_facts(spark, facts_table, [row], key=key)
