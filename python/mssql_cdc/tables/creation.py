"""The CREATE TABLE statement a library table is born with, as Spark SQL text.

Plain SQL runs on classic and Spark Connect sessions alike, where the `DeltaTable` builder
needs Delta's Connect server plugin (docs/decisions/0810-tables-written-by-sql.md). Pure: it
reads `ShapeColumn`s and DataTypes (plain Python objects) and needs no JVM.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from mssql_cdc.tables.migrations import quote_identifier, sql_string
from mssql_cdc.tables.shapes import ShapeColumn

if TYPE_CHECKING:
    from pyspark.sql.types import DataType

__all__ = ["create_statement", "sql_type"]


def sql_type(value: str | DataType) -> str:
    """Return a column type as Spark SQL DDL text; nested field names are backquoted."""
    from pyspark.sql.types import ArrayType, MapType, StructType

    if isinstance(value, str):
        return value
    if isinstance(value, StructType):
        fields = ", ".join(
            f"{quote_identifier(f.name)}: {sql_type(f.dataType)}"
            + ("" if f.nullable else " NOT NULL")
            for f in value.fields
        )
        return f"STRUCT<{fields}>"
    if isinstance(value, ArrayType):
        return f"ARRAY<{sql_type(value.elementType)}>"
    if isinstance(value, MapType):
        return f"MAP<{sql_type(value.keyType)}, {sql_type(value.valueType)}>"
    return value.simpleString()


def create_statement(
    table: str,
    columns: Sequence[ShapeColumn],
    *,
    comment: str,
    properties: Mapping[str, str],
) -> str:
    """Return `CREATE TABLE` for a Delta table: `table` is its SQL name (``delta.`<path>` ``
    or a backquoted name), every column nullable, in the given order.

    Without IF NOT EXISTS: for a path that exists (someone's files, an empty log folder) that
    clause makes Spark skip the statement silently; without it Spark says the table already
    exists, which the caller handles.
    """
    specs = ", ".join(
        f"{quote_identifier(c.name)} {sql_type(c.type)}"
        + ("" if c.comment is None else f" COMMENT {sql_string(c.comment)}")
        for c in columns
    )
    props = ", ".join(f"{sql_string(k)} = {sql_string(v)}" for k, v in properties.items())
    return (
        f"CREATE TABLE {table} ({specs}) USING delta "
        f"COMMENT {sql_string(comment)} TBLPROPERTIES ({props})"
    )
