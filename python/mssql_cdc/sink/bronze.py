"""The sink's bronze write: creation from the batch schema, type checks, the idempotent append.

docs/sink.md, 'Bronze schema changes'. Every append merges the schema (a new column is added, a
missing one written NULL), but a column whose type differs from the table's is refused before
anything is written, unless the owner enabled Delta type widening; nothing is down-cast.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mssql_cdc.errors import SchemaChangedError
from mssql_cdc.facts import TxnKey
from mssql_cdc.tables import (
    TableRef,
    append_idempotent,
    check_append_schema,
    ensure_table,
    needs_column_mapping,
    spark_type_name,
    table_properties,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

__all__ = ["append_batch", "retyped_columns", "unmappable_new_columns"]


def retyped_columns(table_schema: StructType, batch_schema: StructType) -> list[str]:
    """Columns present in both (names compared ignoring case) whose types differ."""
    known = {f.name.lower(): f for f in table_schema.fields}
    return [
        f.name
        for f in batch_schema.fields
        if f.name.lower() in known
        and spark_type_name(known[f.name.lower()].dataType) != spark_type_name(f.dataType)
    ]


def unmappable_new_columns(table_schema: StructType, batch_schema: StructType) -> list[str]:
    """New columns whose names Delta accepts only with column mapping."""
    known = {f.name.lower() for f in table_schema.fields}
    return [
        f.name
        for f in batch_schema.fields
        if f.name.lower() not in known and needs_column_mapping([f.name])
    ]


def append_batch(
    spark: SparkSession,
    df: DataFrame,
    ref: TableRef,
    key: TxnKey,
    metadata: Mapping[str, Any],
    *,
    exists: bool,
) -> None:
    """Create bronze if missing, check the batch's types, then append it under `key`.

    `df` already carries `_batch_id`; `exists` says the sink already opened (and migrated) the
    table. Delta skips the append when `key.version` is at or below the version it recorded for
    `key.app_id` (a replay). The table's properties cost a Spark job to read, so they are read
    only for a batch that retypes a column or adds one that needs column mapping.

    Raises:
        SchemaChangedError: see `tables.shapes.check_append_schema`; or Delta refused a widening.
    """
    created = False
    if not exists:
        created = ensure_table(spark, ref, "bronze", source_schema=df.schema).created
    retyped: list[str] = []
    if not created:
        table_schema = spark.table(ref.sql).schema
        retyped = retyped_columns(table_schema, df.schema)
        if retyped or unmappable_new_columns(table_schema, df.schema):
            properties = table_properties(spark, ref)
            check_append_schema(ref.sql, table_schema, df.schema, properties)
    try:
        append_idempotent(df, ref, key.app_id, key.version, metadata, merge_schema=True)
    except Exception as exc:  # only a refused widening is translated; the rest re-raise as is
        if not retyped or type(exc).__name__ != "AnalysisException":
            raise
        raise SchemaChangedError(
            f"{ref}: Delta refused to widen the column(s) {', '.join(retyped)} ({exc}); nothing "
            "was written. Start a new bronze table"
        ) from exc
