"""The column list a new table is created with, per kind; bronze and silver from a source schema.

Pure: it reads a StructType (plain Python objects) and needs no JVM.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mssql_cdc.core import SQL_TYPE_KEY
from mssql_cdc.errors import ConfigError, InternalError, SchemaChangedError
from mssql_cdc.tables import definitions as schemas
from mssql_cdc.tables.definitions import Column, TableKind

if TYPE_CHECKING:
    from pyspark.sql.types import DataType, StructType

__all__ = [
    "ShapeColumn",
    "check_append_schema",
    "needs_column_mapping",
    "shape_of",
    "spark_type_name",
]

# Characters Delta refuses in a column name unless column mapping is on.
_MAPPING_CHARACTERS = frozenset(" ,;{}()=\t\n")


@dataclass(frozen=True, slots=True)
class ShapeColumn:
    """A column to create: name, type (Spark SQL text or a DataType) and comment (None for a
    captured column); a captured column's SQL type (`datetime2(7)`) when the source schema's
    field metadata records it (`core.SQL_TYPE_KEY`)."""

    name: str
    type: str | DataType
    comment: str | None
    sql_type: str | None = None


def spark_type_name(value: str | DataType) -> str:
    """Return the lower-case Spark SQL text of a type, for comparisons."""
    return value.lower() if isinstance(value, str) else value.simpleString().lower()


def needs_column_mapping(names: Iterable[str]) -> bool:
    """Tell whether any name holds a character Delta accepts only with column mapping."""
    return any(_MAPPING_CHARACTERS.intersection(name) for name in names)


def shape_of(kind: TableKind, source_schema: StructType | None) -> list[ShapeColumn]:
    """Return the columns of a new `kind` table, in creation order.

    Bronze: the stream's output columns (`_command_id` only when the source schema has it), the
    captured columns in source order, then `_batch_id`, `_snapshot`, `_chunk`. Silver: the
    captured columns, then `_start_lsn`, `_commit_ts`. Facts and control ignore the schema.

    Raises:
        ConfigError: a source column spells a library column differently or with another type.
        InternalError: a bronze or silver shape was asked for without a source schema.
    """
    if kind == "facts":
        return [_library(c) for c in schemas.FACTS]
    if kind == "control":
        return [_library(c) for c in schemas.CONTROL]
    if source_schema is None:
        raise InternalError(f"a {kind} table is created from a source schema; none was given")
    library = {c.name: c for c in schemas.library_columns("bronze")}
    if kind == "silver":
        library.update({c.name: c for c in schemas.SILVER_LIBRARY})
    present: set[str] = set()
    captured: list[ShapeColumn] = []
    for field in source_schema.fields:
        known = library.get(field.name)
        if known is None:
            _refuse_case_collision(field.name, library)
            recorded = (field.metadata or {}).get(SQL_TYPE_KEY)
            sql_type = recorded if isinstance(recorded, str) else None
            captured.append(ShapeColumn(field.name, field.dataType, None, sql_type))
            continue
        if spark_type_name(field.dataType) != spark_type_name(known.type):
            raise ConfigError(
                f"source column {field.name} has type {field.dataType.simpleString()}, the "
                f"library column needs {known.type.lower()}; fix the source DataFrame"
            )
        present.add(field.name)
    if kind == "silver":
        return captured + [_library(c) for c in schemas.SILVER_LIBRARY]
    output = [
        _library(c)
        for c in schemas.BRONZE_OUTPUT
        if c.name != "_command_id" or "_command_id" in present
    ]
    return output + captured + [_library(c) for c in schemas.BRONZE_ADDED]


def _library(column: Column) -> ShapeColumn:
    return ShapeColumn(column.name, column.type, column.comment)


def _refuse_case_collision(name: str, library: dict[str, Column]) -> None:
    for known in library:
        if known.lower() == name.lower():
            raise ConfigError(
                f"source column {name!r} collides with the library column {known!r} (names are "
                "compared ignoring case); rename or leave out the source column"
            )


def check_append_schema(
    table: str,
    table_schema: StructType,
    batch_schema: StructType,
    properties: Mapping[str, str],
) -> None:
    """Refuse an append that would retype a column or add one Delta cannot name.

    docs/sink.md, 'Bronze schema changes', gives the rule and its remedies.

    `table` is the table's SQL name, used in messages. New columns are fine (mergeSchema adds
    them); a type that differs is passed on only with `delta.enableTypeWidening = true`.

    Raises:
        SchemaChangedError: naming the table, the column, both types and the remedy.
    """
    existing = {f.name.lower(): f for f in table_schema.fields}
    widening = properties.get("delta.enableTypeWidening", "").lower() == "true"
    mapped = properties.get("delta.columnMapping.mode", "none").lower() in ("name", "id")
    for field in batch_schema.fields:
        known = existing.get(field.name.lower())
        if known is None:
            if not mapped and needs_column_mapping([field.name]):
                raise SchemaChangedError(
                    f"{table}: the new column {field.name!r} needs Delta column mapping, which "
                    "the table does not have; run ALTER TABLE "
                    f"{table} SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name', "
                    "'delta.minReaderVersion' = '2', 'delta.minWriterVersion' = '5') and rerun"
                )
            continue
        found, wanted = spark_type_name(known.dataType), spark_type_name(field.dataType)
        if found != wanted and not widening:
            raise SchemaChangedError(
                f"{table}: column {field.name} is {found} in the table but {wanted} in the "
                "batch; nothing was written. For a widening set "
                f"ALTER TABLE {table} SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true'), "
                "otherwise start a new bronze table"
            )
