"""Which of bronze's columns a snapshot read now would retype: the check `snapshotOnSwitch` makes
before it re-snapshots into the next generation."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mssql_cdc.options import SourceConfig
from mssql_cdc.snapshot.read import read_whole
from mssql_cdc.source import widens_to
from mssql_cdc.tables import TableRef

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["Retyped", "bronze_retypes", "retyped_columns"]


@dataclass(frozen=True, slots=True)
class Retyped:
    """A column bronze holds in one Spark type and the source now reads in another."""

    column: str
    bronze_type: str
    new_type: str

    @property
    def widens(self) -> bool:
        """Whether every bronze value fits the new type, so Delta can widen the column."""
        return widens_to(self.bronze_type, self.new_type)


def retyped_columns(bronze: Mapping[str, str], source: Mapping[str, str]) -> list[Retyped]:
    """The columns in both schemas (names ignoring case) whose Spark types differ."""
    held = {name.lower(): (name, kind) for name, kind in bronze.items()}
    found = []
    for name, kind in source.items():
        old = held.get(name.lower())
        if old is not None and old[1] != kind:
            found.append(Retyped(old[0], old[1], kind))
    return found


def bronze_retypes(
    spark: SparkSession, config: SourceConfig, bronze: TableRef, *, at: str
) -> list[Retyped]:
    """The columns of `bronze` a snapshot stamped `at` would retype; reads no row.

    Raises:
        SchemaChangedError: the source's instances disagree on a type (as the stream would).
    """
    held = spark.table(bronze.sql).schema
    # The snapshot format's schema is what a snapshot and the stream append.
    source = read_whole(spark, config, at).schema
    return retyped_columns(
        {f.name: f.dataType.simpleString().upper() for f in held.fields},
        {f.name: f.dataType.simpleString().upper() for f in source.fields},
    )
