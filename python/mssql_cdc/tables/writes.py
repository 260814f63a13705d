"""Writes to the library's tables: appends with and without a Delta transaction key, and the
transaction records Delta keeps.

Delta skips a write whose `txnVersion` is at or below the version it recorded for the
`txnAppId`, so a keyed append offered twice commits once. Both appends retry Delta's
concurrent-commit conflicts. Neither creates a table: open it with `tables.ensure_table` first.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mssql_cdc.errors import ConfigError, MssqlCdcError
from mssql_cdc.tables.delta_log import delta_log_of, newest_snapshot
from mssql_cdc.tables.refs import TableRef, table_ref
from mssql_cdc.tables.retry import retry_on_conflict

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["append", "append_idempotent", "txn_version"]


def append_idempotent(
    df: DataFrame,
    ref: TableRef | str,
    app_id: str,
    version: int,
    user_metadata: str | Mapping[str, Any] | None = None,
    *,
    merge_schema: bool = False,
) -> None:
    """Append `df` under the Delta transaction key (`app_id`, `version`).

    Delta skips the write when `version` is at or below the one it recorded for `app_id`, so a
    repeat commits nothing. Concurrent-commit conflicts are retried (docs/tables.md, 'Writing').
    """
    if not app_id:
        raise ConfigError(f"{ref}: an idempotent append needs a non-empty txnAppId")
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise ConfigError(f"{ref}: txnVersion={version!r} must be an integer >= 0")
    _append(df, table_ref(ref), (app_id, version), user_metadata, merge_schema)


def append(
    df: DataFrame,
    ref: TableRef | str,
    *,
    user_metadata: str | Mapping[str, Any] | None = None,
    merge_schema: bool = False,
) -> None:
    """Append `df` without a transaction key (a full snapshot, a full snapshot's open row)."""
    _append(df, table_ref(ref), None, user_metadata, merge_schema)


def _append(
    df: DataFrame,
    ref: TableRef,
    txn: tuple[str, int] | None,
    user_metadata: str | Mapping[str, Any] | None,
    merge_schema: bool,
) -> None:
    writer = df.write.format("delta").mode("append")
    if txn is not None:
        writer = writer.option("txnAppId", txn[0]).option("txnVersion", str(txn[1]))
    if user_metadata is not None:
        text = (
            user_metadata
            if isinstance(user_metadata, str)
            else json.dumps(user_metadata, separators=(",", ":"), allow_nan=False)
        )
        writer = writer.option("userMetadata", text)
    if merge_schema:
        writer = writer.option("mergeSchema", "true")

    def save() -> None:
        if ref.is_path:
            writer.save(ref.name)
        else:
            writer.saveAsTable(ref.name)

    retry_on_conflict(save, what=f"{ref}: append")


def txn_version(spark: SparkSession, ref: TableRef | str, app_id: str) -> int | None:
    """Return the last `txnVersion` Delta recorded for `app_id` in the table.

    Delta keeps these records in its log (they survive checkpoints), so this tells which
    keyed writes a table already holds, e.g. the last wave appended under `A#snap.<S>`.

    Returns:
        The version, or None when the table has none for `app_id` or does not exist.
    Raises:
        MssqlCdcError: the session has no JVM (Spark Connect), where Delta's log is not reachable.
    """
    ref = table_ref(ref)
    if not ref.exists(spark):
        return None
    if getattr(spark, "_jvm", None) is None:
        raise MssqlCdcError(
            f"{ref}: reading Delta transaction records needs a classic Spark session with a "
            "JVM; Spark Connect does not expose Delta's log"
        )
    # The log itself, not DESCRIBE DETAIL: that runs Spark jobs to size the table.
    recorded = newest_snapshot(spark, delta_log_of(spark, ref)).transactions().get(app_id)
    return int(recorded.get()) if recorded.isDefined() else None
