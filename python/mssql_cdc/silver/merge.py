"""The silver table: its creation and evolution, and the two MERGEs that write it.

docs/silver.md, 'Schema', gives the evolution rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from mssql_cdc.errors import SchemaChangedError
from mssql_cdc.silver.images import DELETE_FLAG, BronzeShape
from mssql_cdc.tables import TableRef, ensure_table, merge_into, quote_identifier

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["ensure_silver", "merge_images"]


def ensure_silver(spark: SparkSession, ref: TableRef, shape: BronzeShape) -> None:
    """Create silver from bronze's captured types, or add the columns bronze gained since.

    Raises:
        ConfigError: `ref` is a table of another kind.
        SchemaChangedError: a column's type differs between bronze and silver; nothing changed.
    """
    from pyspark.sql.types import StructType

    handle = ensure_table(spark, ref, "silver", source_schema=StructType(list(shape.captured)))
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


def merge_images(
    spark: SparkSession,
    ref: TableRef,
    images: DataFrame,
    keys: Sequence[str],
    names: Sequence[str],
    *,
    rebuild: bool,
) -> None:
    """MERGE `images` into silver: deletes remove their key, upserts set it.

    A rebuild makes silver exactly `images` (every key absent from them goes too). Otherwise an
    image lands only where it is newer than silver's row, so a rerun applies nothing twice.
    """
    flag = f"s.{quote_identifier(DELETE_FLAG)}"
    newer = "TRUE" if rebuild else "s._start_lsn > t._start_lsn"
    quoted = [quote_identifier(n) for n in names]
    clauses = [
        f"WHEN MATCHED AND {flag} AND {newer} THEN DELETE",
        f"WHEN MATCHED AND NOT {flag} AND {newer} THEN UPDATE SET "
        + ", ".join(f"t.{n} = s.{n}" for n in quoted),
        f"WHEN NOT MATCHED AND NOT {flag} THEN INSERT ({', '.join(quoted)}) "
        f"VALUES ({', '.join(f's.{n}' for n in quoted)})",
    ]
    if rebuild:
        clauses.append("WHEN NOT MATCHED BY SOURCE THEN DELETE")
    merge_into(ref.sql, images, on=_on_keys(keys), clauses=clauses)
