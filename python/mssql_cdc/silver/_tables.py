"""Table references, kinds and creation for silver's own use (spec 20, section 1).

Stand-in for the shared `mssql_cdc.tables` module being written on another branch: when the
two branches merge, these functions give way to it (see docs/silver.md, "For the integrator").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mssql_cdc.errors import ConfigError

if TYPE_CHECKING:
    from delta.tables import DeltaTable
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "Column",
    "check_kind",
    "create_table",
    "delta_table",
    "is_path",
    "needs_column_mapping",
    "quote",
    "read_table",
    "sql_name",
    "table_exists",
    "table_properties",
    "table_version",
]

KIND = "mssql_cdc.kind"
SCHEMA_VERSION = "mssql_cdc.schema_version"
_MAPPING_CHARS = frozenset(" ,;{}()=\t\n")
_checked: dict[str, str] = {}


@dataclass(frozen=True, slots=True)
class Column:
    """One column of a table the library creates: Spark SQL type, and a comment or None."""

    name: str
    type: str
    comment: str | None = None


def is_path(ref: str) -> bool:
    """A reference holding '/' or ':' is a path; anything else names a catalog table."""
    return "/" in ref or ":" in ref


def quote(name: str) -> str:
    """Quote one identifier for Spark SQL (backticks, inner backticks doubled)."""
    return "`" + name.replace("`", "``") + "`"


def sql_name(ref: str) -> str:
    """The table as Spark SQL names it: delta.`<path>` for a path, the name as given otherwise."""
    return f"delta.{quote(ref)}" if is_path(ref) else ref


def table_exists(spark: SparkSession, ref: str) -> bool:
    from delta.tables import DeltaTable

    if is_path(ref):
        return bool(DeltaTable.isDeltaTable(spark, ref))
    return bool(spark.catalog.tableExists(ref))


def delta_table(spark: SparkSession, ref: str) -> DeltaTable:
    from delta.tables import DeltaTable

    if is_path(ref):
        return DeltaTable.forPath(spark, ref)
    return DeltaTable.forName(spark, ref)


def read_table(spark: SparkSession, ref: str, version: int | None = None) -> DataFrame:
    """The table's rows, at `version` when given (Delta time travel)."""
    at = "" if version is None else f" VERSION AS OF {int(version)}"
    return spark.sql(f"SELECT * FROM {sql_name(ref)}{at}")


def table_version(spark: SparkSession, ref: str) -> int:
    """The table's current Delta version."""
    row = delta_table(spark, ref).history(1).select("version").first()
    if row is None:
        raise ConfigError(f"{ref}: the Delta table has no history; is it a Delta table?")
    return int(row["version"])


def table_properties(spark: SparkSession, ref: str) -> dict[str, str]:
    # SHOW TBLPROPERTIES reads the table's metadata only; DESCRIBE DETAIL also sizes its files.
    rows = spark.sql(f"SHOW TBLPROPERTIES {sql_name(ref)}").collect()
    return {str(r["key"]): str(r["value"]) for r in rows}


def check_kind(spark: SparkSession, ref: str, expected: str, role: str) -> None:
    """Refuse a table whose `mssql_cdc.kind` is missing or not `expected`.

    Raises:
        ConfigError: the kind differs; the message names the table, both kinds and the role.
    """
    if _checked.get(ref) == expected:
        return
    found = table_properties(spark, ref).get(KIND)
    if found == expected:
        _checked[ref] = expected  # a table's kind is checked once per process
    else:
        shown = f"kind '{found}'" if found else f"no {KIND} property"
        raise ConfigError(
            f"{role} {ref}: the table has {shown}, but a {expected} table was expected; check "
            f"that the arguments are not swapped and that mssql_cdc created this table"
        )


def needs_column_mapping(names: Sequence[str]) -> bool:
    """Tell whether a column name holds a character Delta refuses without column mapping."""
    return any(ch in _MAPPING_CHARS for name in names for ch in name)


def create_table(
    spark: SparkSession,
    ref: str,
    columns: Sequence[Column],
    *,
    comment: str,
    kind: str,
    schema_version: int,
) -> None:
    """Create the table if it does not exist, typed, commented and stamped (spec 20, 1).

    A lost creation race (the table or its first commit appeared meanwhile) is not an error:
    the table is re-opened and its kind checked.
    """
    from delta.tables import DeltaTable

    builder = DeltaTable.createIfNotExists(spark)
    builder = builder.location(ref) if is_path(ref) else builder.tableName(ref)
    for col in columns:
        builder = builder.addColumn(col.name, col.type, nullable=True, comment=col.comment)
    builder = builder.comment(comment)
    builder = builder.property(KIND, kind).property(SCHEMA_VERSION, str(schema_version))
    if needs_column_mapping([c.name for c in columns]):
        builder = (
            builder.property("delta.columnMapping.mode", "name")
            .property("delta.minReaderVersion", "2")
            .property("delta.minWriterVersion", "5")
        )
    try:
        builder.execute()
    except Exception:  # only a lost creation race is tolerated: the table exists now
        if not table_exists(spark, ref):
            raise
    check_kind(spark, ref, kind, kind)
