"""The stream's table and schema, resolved on the driver (docs/source.md, 'Rows').

`resolve_table` finds the configured capture instance and its table's instances;
`declared_columns` infers or checks the captured columns; `spark_schema` builds the output
schema, each captured column's SQL type (`datetime2(7)`) in its field metadata under
`core.SQL_TYPE_KEY`, so bronze can record it (decision 1343); `read_columns` reads the declared
columns back from a Spark schema, so the stream reader and the executors need no catalog query
to know them. With the source's own snapshots the schema ends with `_snapshot` (decision 1396).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mssql_cdc.core import FIGURES_COLUMN, SQL_TYPE_KEY
from mssql_cdc.errors import ConfigError
from mssql_cdc.options import METADATA_COLUMNS, SourceConfig
from mssql_cdc.source.type_rules import spark_type_of, union_columns
from mssql_cdc.sqlserver import (
    CaptureCatalog,
    CaptureInstance,
    ReadColumn,
    find_instance,
    table_instances,
)

if TYPE_CHECKING:
    from pyspark.sql.types import DataType, StructType

__all__ = [
    "CHANGE_METADATA",
    "ResolvedTable",
    "declared_columns",
    "null_columns",
    "read_columns",
    "resolve_table",
    "spark_schema",
]

_log = logging.getLogger("mssql_cdc.source.formats")

CHANGE_METADATA = (
    ("_capture_instance", "STRING"),
    ("_start_lsn", "STRING"),
    ("_seqval", "STRING"),
    ("_operation", "INT"),
    ("_command_id", "INT"),
    ("_commit_ts", "TIMESTAMP_NTZ"),
)


@dataclass(frozen=True, slots=True)
class ResolvedTable:
    """The configured instance as resolved, and its table's established instances."""

    instance: CaptureInstance
    instances: tuple[CaptureInstance, ...]  # older first
    followed_from: str | None

    @property
    def source_schema(self) -> str:
        return self.instance.source_schema

    @property
    def source_table(self) -> str:
        return self.instance.source_table


def resolve_table(
    catalog: CaptureCatalog, configured: str, *, remembered: ResolvedTable | None = None
) -> ResolvedTable:
    """Resolve `configured` (exactly, then ignoring case, or a disabled instance followed to
    its table's remaining one) and list its table's instances.

    `remembered` is the table this run resolved before: a configured instance disabled since
    is followed through it, custom-named or not (docs/source.md, 'Capture instances').

    Raises:
        ConfigError: the instance is unknown or ambiguous (the message lists what was found).
    """
    table = None if remembered is None else (remembered.source_schema, remembered.source_table)
    resolved = find_instance(catalog, configured, remembered=table)
    found = resolved.instance
    instances = table_instances(catalog.capture_instances(found.source_schema, found.source_table))
    return ResolvedTable(found, tuple(instances) or (found,), resolved.followed_from)


def declared_columns(
    catalog: CaptureCatalog, config: SourceConfig, table: ResolvedTable
) -> tuple[ReadColumn, ...]:
    """The captured columns the stream reads: `columns` as declared, else the union by name of
    the table's instances (older first), computed columns left out.

    Raises:
        ConfigError: a declared column no instance captures, a captured column named like a
            metadata column, a type without a Spark type, or a change table without
            `__$command_id` while includeCommandId=true.
        SchemaChangedError: two instances type a column incompatibly.
    """
    per_instance: list[list[tuple[str, str]]] = []
    sql_types: dict[str, str] = {}
    type_texts: dict[str, str] = {}  # the newest instance's, as instances are older first
    computed: set[str] = set()
    for instance in table.instances:
        if (
            config.include_command_id
            and not catalog.change_table_access(instance.name).has_command_id
        ):
            raise ConfigError(
                f"capture instance '{instance.name}' has no __$command_id column; set "
                "includeCommandId=false to read it"
            )
        columns: list[tuple[str, str]] = []
        for column in catalog.captured_columns(instance.name):
            if column.name.lower() in METADATA_COLUMNS:
                raise ConfigError(
                    f"capture instance '{instance.name}' captures a column named "
                    f"'{column.name}', which the source uses for its own metadata; capture "
                    "the table without it or rename the column"
                )
            sql_types[column.name.lower()] = column.sql_type
            type_texts[column.name.lower()] = column.type_text
            if column.is_computed:
                computed.add(column.name.lower())
                continue
            if config.columns is None:
                columns.append((column.name, spark_type_of(column.name, column.type_text)))
        per_instance.append(columns)
    if config.columns is None:
        merged = union_columns(table.instance.name, per_instance)
        return tuple(
            ReadColumn(n, t, sql_types.get(n.lower()), type_texts.get(n.lower())) for n, t in merged
        )
    out = []
    for declared in config.columns:
        key = declared.name.lower()
        if key not in sql_types:
            raise ConfigError(
                f"option columns lists '{declared.name}', which no capture instance of "
                f"[{table.source_schema}].[{table.source_table}] captures; remove it or "
                "capture it"
            )
        if key in computed:
            _log.warning("column %r is computed; CDC captures it as NULL", declared.name)
        out.append(
            ReadColumn(declared.name, declared.spark_type, sql_types[key], type_texts.get(key))
        )
    return tuple(out)


def null_columns(columns: Sequence[ReadColumn], instance: CaptureInstance) -> tuple[str, ...]:
    """Declared columns `instance` does not capture; they read as typed NULL."""
    captured = {c.lower() for c in instance.captured_columns}
    return tuple(c.name for c in columns if c.name.lower() not in captured)


def _spark_type(text: str) -> DataType:
    """The DataType of a canonical Spark type (`DECIMAL(12,2)`, `TIMESTAMP_NTZ`), built without
    a JVM: `schema()` runs in a Python worker with no session to parse DDL."""
    from pyspark.sql import types as T

    simple: dict[str, DataType] = {
        "BOOLEAN": T.BooleanType(),
        "SMALLINT": T.ShortType(),
        "INT": T.IntegerType(),
        "BIGINT": T.LongType(),
        "FLOAT": T.FloatType(),
        "DOUBLE": T.DoubleType(),
        "DATE": T.DateType(),
        "TIMESTAMP_NTZ": T.TimestampNTZType(),
        "TIMESTAMP": T.TimestampType(),
        "STRING": T.StringType(),
        "BINARY": T.BinaryType(),
    }
    if text in simple:
        return simple[text]
    if text.startswith("DECIMAL(") and text.endswith(")"):
        precision, _, scale = text[len("DECIMAL(") : -1].partition(",")
        return T.DecimalType(int(precision), int(scale or 0))
    raise ConfigError(f"the Spark type {text!r} is not one the source produces")


def spark_schema(
    columns: Sequence[ReadColumn],
    *,
    include_command_id: bool,
    chunk: bool = False,
    marked: bool = False,
) -> StructType:
    """The output schema: metadata columns first, then the declared columns, each with its SQL
    type (when known) in its field metadata under `SQL_TYPE_KEY`; last `_chunk` (`chunk`) or
    `_snapshot` (`marked`: the stream's own snapshots)."""
    from pyspark.sql.types import IntegerType, StringType, StructField, StructType

    fields = [
        StructField(name, _spark_type(kind), True)
        for name, kind in CHANGE_METADATA
        if include_command_id or name != "_command_id"
    ]
    for c in columns:
        metadata = {SQL_TYPE_KEY: c.type_text} if c.type_text else {}
        fields.append(StructField(c.name, _spark_type(c.spark_type), True, metadata))
    if chunk:
        fields.append(StructField("_chunk", IntegerType(), True))
    if marked:
        fields.append(StructField("_snapshot", StringType(), True))
    return StructType(fields)


def read_columns(schema: Any) -> tuple[ReadColumn, ...]:
    """The declared columns of a Spark StructType the source produced (metadata left out)."""
    out = []
    for field in schema.fields:
        if field.name in METADATA_COLUMNS or field.name == FIGURES_COLUMN:
            continue
        out.append(ReadColumn(field.name, field.dataType.simpleString().upper()))
    return tuple(out)
