"""The silver table: its creation and evolution, and the two MERGEs that write it (spec 20, 8)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from mssql_cdc import tables
from mssql_cdc.errors import SchemaChangedError
from mssql_cdc.migrations import quote_identifier
from mssql_cdc.silver.images import DELETE_FLAG, BronzeShape

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["ensure_silver", "merge_newer", "merge_rebuild"]


def ensure_silver(spark: SparkSession, ref: tables.TableRef, shape: BronzeShape) -> None:
    """Create silver from bronze's captured types, or add the columns bronze gained since.

    Raises:
        ConfigError: `ref` is a table of another kind.
        SchemaChangedError: a column's type differs between bronze and silver; nothing changed.
    """
    from pyspark.sql.types import StructType

    handle = tables.ensure_table(
        spark, ref, "silver", source_schema=StructType(list(shape.captured))
    )
    if handle.created:
        return
    existing = {f.name: f for f in spark.table(ref.sql).schema.fields}
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
        spec = ", ".join(f"{quote_identifier(f.name)} {f.dataType.simpleString()}" for f in added)
        spark.sql(f"ALTER TABLE {ref.sql} ADD COLUMNS ({spec})")


def _on_keys(keys: Sequence[str]) -> str:
    return " AND ".join(f"t.{quote_identifier(k)} <=> s.{quote_identifier(k)}" for k in keys)


def _assignments(names: Sequence[str]) -> dict[str, str]:
    return {quote_identifier(n): f"s.{quote_identifier(n)}" for n in names}


def merge_rebuild(
    spark: SparkSession,
    ref: tables.TableRef,
    images: DataFrame,
    keys: Sequence[str],
    names: Sequence[str],
) -> None:
    """Make silver exactly `images`: upserts land, deletes and every key absent from it go."""
    flag = f"s.{quote_identifier(DELETE_FLAG)}"
    values = _assignments(names)
    (
        ref.delta_table(spark)
        .alias("t")
        .merge(images.alias("s"), _on_keys(keys))
        .whenMatchedDelete(condition=flag)
        .whenMatchedUpdate(set=values)  # type: ignore[arg-type]
        .whenNotMatchedInsert(condition=f"NOT {flag}", values=values)  # type: ignore[arg-type]
        .whenNotMatchedBySourceDelete()
        .execute()
    )


def merge_newer(
    spark: SparkSession,
    ref: tables.TableRef,
    images: DataFrame,
    keys: Sequence[str],
    names: Sequence[str],
) -> None:
    """Apply `images` where each is newer than silver's row (so a rerun applies nothing twice)."""
    flag = f"s.{quote_identifier(DELETE_FLAG)}"
    newer = "s._start_lsn > t._start_lsn"
    values = _assignments(names)
    (
        ref.delta_table(spark)
        .alias("t")
        .merge(images.alias("s"), _on_keys(keys))
        .whenMatchedDelete(condition=f"{flag} AND {newer}")
        .whenMatchedUpdate(condition=f"NOT {flag} AND {newer}", set=values)  # type: ignore[arg-type]
        .whenNotMatchedInsert(condition=f"NOT {flag}", values=values)  # type: ignore[arg-type]
        .execute()
    )
