"""The version and file count of a Delta table's newest snapshot, read without Spark jobs.

`apply_changes` pins bronze at its newest version and writes silver with one append when silver
holds no data file (decision 0460). A path table answers both in process through deltalake
(the log only). A catalog name, or a path deltalake cannot open, is asked through the public
commands (DESCRIBE HISTORY, DESCRIBE DETAIL), which cost a Spark job each.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from mssql_cdc.errors import ConfigError
from mssql_cdc.tables import TableOutOfReach, newest_version

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from mssql_cdc.tables import TableRef

__all__ = ["TableState", "table_state"]


@dataclass(frozen=True, slots=True)
class TableState:
    """A Delta table's newest version and how many data files it holds (0: no rows)."""

    version: int
    files: int


def table_state(spark: SparkSession, ref: TableRef) -> TableState:
    """Return the newest version of the existing Delta table `ref` and its data file count.

    Raises:
        ConfigError: the table has no history (not a Delta table).
    """
    try:
        found = newest_version(ref)
        return TableState(found.version, found.files)
    except TableOutOfReach:
        pass  # a catalog name, or a path only Spark reads
    latest = spark.sql(f"DESCRIBE HISTORY {ref.sql} LIMIT 1").select("version").first()
    if latest is None:
        raise ConfigError(f"{ref}: the Delta table has no history; is it a Delta table?")
    detail = spark.sql(f"DESCRIBE DETAIL {ref.sql}").select("numFiles").first()
    files = int(detail["numFiles"]) if detail is not None and detail["numFiles"] else 0
    return TableState(int(latest["version"]), files)
