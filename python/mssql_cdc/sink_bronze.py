"""The sink's bronze write: creation from the batch schema, type checks, the idempotent append.

Sections 3.2 to 3.4 of 20-sink-and-tables.md. Every append merges the schema (a new column is
added, a missing one written NULL), but a column whose type differs from the table's is refused
before anything is written, unless the owner enabled Delta type widening; nothing is down-cast.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mssql_cdc import table_writes, tables
from mssql_cdc.errors import SchemaChangedError
from mssql_cdc.facts_keys import TxnKey
from mssql_cdc.migrations import sql_string
from mssql_cdc.table_shapes import needs_column_mapping

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import DataType, StructType

__all__ = ["TypeDifference", "append_batch", "check_batch_schema"]

_WIDENING = "delta.enableTypeWidening"
_MAPPING = "delta.columnMapping.mode"


@dataclass(frozen=True, slots=True)
class TypeDifference:
    """A column present in table and batch whose types differ (nested fields as a.b)."""

    column: str
    table_type: str
    batch_type: str


def check_batch_schema(
    ref: tables.TableRef,
    table_schema: StructType,
    batch_schema: StructType,
    properties: Callable[[], Mapping[str, str]],
) -> list[TypeDifference]:
    """Check a batch against the bronze table it is about to be appended to.

    `properties` returns the table's properties; it is called only when a difference needs
    them (reading them costs a Spark job per batch otherwise).

    Returns:
        The type differences Delta will be asked to widen (only when the table has
        delta.enableTypeWidening = true; otherwise the list is always empty).
    Raises:
        SchemaChangedError: a type differs and widening is off, or a new column needs column
            mapping the table does not have; nothing has been written.
    """
    known = {f.name.lower(): f for f in table_schema.fields}
    differences: list[TypeDifference] = []
    new_columns: list[str] = []
    for field in batch_schema.fields:
        existing = known.get(field.name.lower())
        if existing is None:
            new_columns.append(field.name)
        else:
            differences.extend(_differences(existing.name, existing.dataType, field.dataType))
    unmappable = [name for name in new_columns if needs_column_mapping([name])]
    if not differences and not unmappable:
        return []
    found = properties()
    widening = found.get(_WIDENING, "").strip().lower() == "true"
    if differences and not widening:
        first = differences[0]
        raise SchemaChangedError(
            f"{ref}: column {first.column} is {first.table_type} in the table but "
            f"{first.batch_type} in micro-batch data"
            + (f" (and {len(differences) - 1} more column(s))" if len(differences) > 1 else "")
            + "; nothing was written. If the new type widens the old one, enable type widening "
            f"(ALTER TABLE {ref.sql} SET TBLPROPERTIES ('{_WIDENING}' = 'true')) and restart; "
            "otherwise start a new bronze table"
        )
    mapping = found.get(_MAPPING, "none").strip().lower()
    if unmappable and mapping not in ("name", "id"):
        raise SchemaChangedError(
            f"{ref}: the new column(s) {', '.join(repr(n) for n in unmappable)} hold characters "
            "Delta accepts only with column mapping, which this table does not use; nothing "
            f"was written. Run ALTER TABLE {ref.sql} SET TBLPROPERTIES ("
            f"{sql_string(_MAPPING)} = 'name', 'delta.minReaderVersion' = '2', "
            "'delta.minWriterVersion' = '5') and restart the stream"
        )
    return differences


def append_batch(
    spark: SparkSession,
    df: DataFrame,
    ref: tables.TableRef,
    key: TxnKey,
    metadata: Mapping[str, Any],
    *,
    exists: bool,
) -> None:
    """Create bronze if missing, check the batch's types, then append it under `key`.

    `df` already carries `_batch_id`; `exists` says the sink already opened (and migrated) the
    table. Delta skips the append when `key.version` is at or below the version it recorded for
    `key.app_id` (a replay).

    Raises:
        SchemaChangedError: see `check_batch_schema`; or Delta refused a widening.
    """
    created = False
    if not exists:
        created = tables.ensure_table(spark, ref, "bronze", source_schema=df.schema).created
    differences: list[TypeDifference] = []
    if not created:
        table_schema = spark.table(ref.sql).schema
        differences = check_batch_schema(
            ref, table_schema, df.schema, lambda: tables.table_properties(spark, ref)
        )
    try:
        table_writes.append_idempotent(
            df, ref, key.app_id, key.version, metadata, merge_schema=True
        )
    except Exception as exc:  # only a refused widening is translated; the rest re-raise as is
        if not differences or type(exc).__name__ != "AnalysisException":
            raise
        first = differences[0]
        raise SchemaChangedError(
            f"{ref}: Delta refused to widen column {first.column} from {first.table_type} to "
            f"{first.batch_type} ({exc}); nothing was written. Start a new bronze table"
        ) from exc


def _differences(name: str, table_type: DataType, batch_type: DataType) -> list[TypeDifference]:
    from pyspark.sql.types import ArrayType, MapType, StructType

    if isinstance(table_type, StructType) and isinstance(batch_type, StructType):
        # Nested fields merge like top-level ones: only fields present in both are compared.
        inner = {f.name.lower(): f for f in table_type.fields}
        found: list[TypeDifference] = []
        for field in batch_type.fields:
            existing = inner.get(field.name.lower())
            if existing is not None:
                found.extend(
                    _differences(f"{name}.{existing.name}", existing.dataType, field.dataType)
                )
        return found
    if isinstance(table_type, ArrayType) and isinstance(batch_type, ArrayType):
        return _differences(f"{name}.element", table_type.elementType, batch_type.elementType)
    if isinstance(table_type, MapType) and isinstance(batch_type, MapType):
        return _differences(f"{name}.key", table_type.keyType, batch_type.keyType) + (
            _differences(f"{name}.value", table_type.valueType, batch_type.valueType)
        )
    if table_type.simpleString() != batch_type.simpleString():
        return [TypeDifference(name, table_type.simpleString(), batch_type.simpleString())]
    return []
