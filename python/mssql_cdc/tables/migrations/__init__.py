"""Migrations: per table kind, an ordered, append-only list of steps from the base shape.

A table's `mssql_cdc.schema_version` is the number of migrations applied to it. A released
migration is never edited, reordered or removed; its comment texts are literals, frozen with it.
Every step is idempotent, so a crash between a step and its version stamp reruns it harmlessly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "Migration",
    "NewColumn",
    "add_columns",
    "quote_identifier",
    "set_comments",
    "sql_string",
]


@dataclass(frozen=True, slots=True)
class NewColumn:
    """A column a migration adds: name, Spark SQL type and comment."""

    name: str
    type: str
    comment: str


@dataclass(frozen=True, slots=True)
class Migration:
    """One step: `apply(spark, table)` where `table` is the table's SQL identifier.

    `adds` and `comments` describe what the step does, so tests and docs can read it without
    running it; `apply` does exactly that through the idempotent helpers below.
    """

    name: str
    adds: tuple[NewColumn, ...] = ()
    comments: Mapping[str, str] | None = None
    table_comment: str | None = None

    def apply(self, spark: SparkSession, table: str) -> None:
        if self.adds:
            add_columns(spark, table, self.adds)
        if self.comments or self.table_comment is not None:
            set_comments(spark, table, self.comments or {}, table_comment=self.table_comment)


def quote_identifier(name: str) -> str:
    """Quote one column name for Spark SQL (backticks, doubled inside)."""
    return "`" + name.replace("`", "``") + "`"


def sql_string(text: str) -> str:
    """Quote `text` as a Spark SQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def add_columns(spark: SparkSession, table: str, columns: Sequence[NewColumn]) -> None:
    """ALTER TABLE ... ADD COLUMNS with comments, skipping columns already present.

    A concurrent writer may add them between the look and the ALTER; the ALTER's "already
    exists" error then leads to a second look, and only columns still missing are an error.
    """
    for attempt in range(2):
        present = {name.lower() for name in spark.table(table).columns}
        missing = [c for c in columns if c.name.lower() not in present]
        if not missing:
            return
        parts = ", ".join(
            f"{quote_identifier(c.name)} {c.type} COMMENT {sql_string(c.comment)}" for c in missing
        )
        try:
            spark.sql(f"ALTER TABLE {table} ADD COLUMNS ({parts})")
            return
        except Exception as exc:  # only a column added under us is looked at again
            if attempt == 1 or not _added_under_us(exc):
                raise


def _added_under_us(exc: Exception) -> bool:
    """Whether an ADD COLUMNS failed because the column exists: Spark's analyzer says
    FIELD_ALREADY_EXISTS, Delta's command (when the look raced the other writer's commit)
    DELTA_DUPLICATE_COLUMNS_FOUND."""
    text = str(exc).upper().replace(" ", "_")
    return "ALREADY_EXISTS" in text or "DUPLICATE_COLUMNS_FOUND" in text


def set_comments(
    spark: SparkSession,
    table: str,
    comments: Mapping[str, str],
    *,
    table_comment: str | None = None,
) -> None:
    """ALTER COLUMN ... COMMENT for each column, and COMMENT ON TABLE when given.

    A comment already equal to the text is left alone, so a rerun makes no commit.
    """
    current = {f.name.lower(): f.metadata.get("comment") for f in spark.table(table).schema.fields}
    for name, text in comments.items():
        if current.get(name.lower()) == text:
            continue
        column = quote_identifier(name)
        spark.sql(f"ALTER TABLE {table} ALTER COLUMN {column} COMMENT {sql_string(text)}")
    if table_comment is not None:
        described = spark.sql(f"DESCRIBE DETAIL {table}").collect()[0]["description"]
        if described == table_comment:
            return
        spark.sql(f"COMMENT ON TABLE {table} IS {sql_string(table_comment)}")
