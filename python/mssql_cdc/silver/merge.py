"""The silver table: its creation and evolution, and the two MERGEs that write it (spec 20, 8)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from mssql_cdc.errors import SchemaChangedError
from mssql_cdc.silver._tables import (
    Column,
    check_kind,
    create_table,
    delta_table,
    quote,
    sql_name,
    table_exists,
)
from mssql_cdc.silver.images import DELETE_FLAG, BronzeShape

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["ensure_silver", "merge_newer", "merge_rebuild"]

COMMENT = "mssql_cdc silver: current state of one source table, one row per key, by apply_changes"
START_LSN_COMMENT = "LSN of the row's current image; the snapshot's LSN if unchanged since"
COMMIT_TS_COMMENT = "UTC commit time of _start_lsn"
SCHEMA_VERSION = 0  # silver has no migrations yet


def ensure_silver(spark: SparkSession, ref: str, shape: BronzeShape) -> None:
    """Create silver from bronze's captured types, or add the columns bronze gained since.

    Raises:
        SchemaChangedError: a column's type differs between bronze and silver; nothing changed.
    """
    if not table_exists(spark, ref):
        columns = [Column(f.name, f.dataType.simpleString()) for f in shape.captured]
        columns += [
            Column("_start_lsn", "STRING", START_LSN_COMMENT),
            Column("_commit_ts", shape.commit_ts.dataType.simpleString(), COMMIT_TS_COMMENT),
        ]
        create_table(
            spark, ref, columns, comment=COMMENT, kind="silver", schema_version=SCHEMA_VERSION
        )
        return
    check_kind(spark, ref, "silver", "target")
    existing = {f.name: f for f in delta_table(spark, ref).toDF().schema.fields}
    for f in shape.captured:
        have = existing.get(f.name)
        if have is not None and have.dataType != f.dataType:
            raise SchemaChangedError(
                f"silver {ref}: column {f.name} is {have.dataType.simpleString()} in silver but "
                f"{f.dataType.simpleString()} in bronze, and silver types never change; alter "
                f"the silver column by hand (or rebuild silver), then call apply_changes again"
            )
    added = [f for f in shape.captured if f.name not in existing]
    if added:
        spec = ", ".join(f"{quote(f.name)} {f.dataType.simpleString()}" for f in added)
        spark.sql(f"ALTER TABLE {sql_name(ref)} ADD COLUMNS ({spec})")


def _on_keys(keys: Sequence[str]) -> str:
    return " AND ".join(f"t.{quote(k)} <=> s.{quote(k)}" for k in keys)


def _assignments(names: Sequence[str]) -> dict[str, str]:
    return {quote(n): f"s.{quote(n)}" for n in names}


def merge_rebuild(
    spark: SparkSession, ref: str, images: DataFrame, keys: Sequence[str], names: Sequence[str]
) -> None:
    """Make silver exactly `images`: upserts land, deletes and every key absent from it go."""
    flag = f"s.{quote(DELETE_FLAG)}"
    values = _assignments(names)
    (
        delta_table(spark, ref)
        .alias("t")
        .merge(images.alias("s"), _on_keys(keys))
        .whenMatchedDelete(condition=flag)
        .whenMatchedUpdate(set=values)  # type: ignore[arg-type]
        .whenNotMatchedInsert(condition=f"NOT {flag}", values=values)  # type: ignore[arg-type]
        .whenNotMatchedBySourceDelete()
        .execute()
    )


def merge_newer(
    spark: SparkSession, ref: str, images: DataFrame, keys: Sequence[str], names: Sequence[str]
) -> None:
    """Apply `images` where each is newer than silver's row (so a rerun applies nothing twice)."""
    flag = f"s.{quote(DELETE_FLAG)}"
    newer = "s._start_lsn > t._start_lsn"
    values = _assignments(names)
    (
        delta_table(spark, ref)
        .alias("t")
        .merge(images.alias("s"), _on_keys(keys))
        .whenMatchedDelete(condition=f"{flag} AND {newer}")
        .whenMatchedUpdate(condition=f"NOT {flag} AND {newer}", set=values)  # type: ignore[arg-type]
        .whenNotMatchedInsert(condition=f"NOT {flag}", values=values)  # type: ignore[arg-type]
        .execute()
    )
