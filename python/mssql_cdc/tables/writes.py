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

from mssql_cdc.errors import InternalError, MssqlCdcError
from mssql_cdc.tables.delta_read import path_of, transaction_version
from mssql_cdc.tables.reference import TableOutOfReach
from mssql_cdc.tables.refs import TableRef, table_ref
from mssql_cdc.tables.retry import retry_on_conflict
from mssql_cdc.tables.shared_tables import exists_here

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["allow_type_widening", "append", "append_idempotent", "txn_version"]


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
        raise InternalError(f"{ref}: an idempotent append was given an empty txnAppId")
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise InternalError(
            f"{ref}: an idempotent append was given txnVersion={version!r}, not an integer >= 0"
        )
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


def allow_type_widening(spark: SparkSession, ref: TableRef | str) -> None:
    """Let Delta widen `ref`'s columns on a schema-merging append (`delta.enableTypeWidening`,
    the remedy docs/sink.md names); setting it again changes nothing."""
    checked = table_ref(ref)
    retry_on_conflict(
        lambda: spark.sql(
            f"ALTER TABLE {checked.sql} SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')"
        ),
        what=f"{checked}: enable type widening",
    )


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
    They are read in process by deltalake (no Spark job); a table this process cannot read
    (a location deltalake cannot open) has its log files read through Spark.

    Returns:
        The version, or None when the table has none for `app_id` or does not exist.
    """
    ref = table_ref(ref)
    if not exists_here(spark, ref):
        return None
    try:
        return transaction_version(path_of(spark, ref), app_id)
    except TableOutOfReach:
        return _logged_txn_version(spark, ref, app_id)


def _logged_txn_version(spark: SparkSession, ref: TableRef, app_id: str) -> int | None:
    """The highest `txn.version` of `app_id` in the log's commit and checkpoint files, read by
    Spark: the library's keyed writers only raise a key's version, so the highest is the last,
    and the files a log cleanup keeps (the newest checkpoint and the commits after) hold it."""
    from pyspark.errors import AnalysisException
    from pyspark.sql import functions as F

    try:
        location = path_of(spark, ref).name
    except TableOutOfReach as exc:
        raise MssqlCdcError(
            f"{ref}: the table's transaction records are out of reach ({exc}); pass the "
            "table as a path"
        ) from exc
    found: list[int] = []
    for kind, pattern in (("json", "*.json"), ("parquet", "*.checkpoint*.parquet")):
        try:  # Spark Connect analyses lazily: the columns are where a missing file shows
            frame = spark.read.format(kind).load(f"{location}/_delta_log/{pattern}")
            columns = frame.columns
        except AnalysisException:
            continue  # no checkpoint yet
        if "txn" not in columns:
            continue
        row = frame.where(F.col("txn.appId") == F.lit(app_id)).agg(F.max("txn.version")).first()
        if row is not None and row[0] is not None:
            found.append(int(row[0]))
    return max(found, default=None)
