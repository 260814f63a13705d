"""The version and file count of a Delta table's newest snapshot, read without Spark jobs.

`apply_changes` pins bronze at its newest version and writes silver with one append when silver
holds no data file (decision 0460). Both facts are in the snapshot Delta keeps in the driver
(the file count in its checksum), so they are read from there; the public commands that also
answer them (DESCRIBE HISTORY, DESCRIBE DETAIL) run a Spark job each, which costs seconds per
call on a busy machine. Without a JVM (Spark Connect), or when Delta's log API is not the one
this was written for, the public commands answer.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mssql_cdc.errors import ConfigError
from mssql_cdc.tables.delta_log import delta_log_of, newest_snapshot

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from mssql_cdc.tables.refs import TableRef

__all__ = ["TableState", "table_state"]

_log = logging.getLogger("mssql_cdc.silver")


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
    if getattr(spark, "_jvm", None) is not None:
        try:
            return _from_delta_log(spark, ref)
        except Exception as exc:  # noqa: BLE001 - Delta's internal API moved: ask publicly
            _log.debug("%s: reading the Delta snapshot directly failed: %s", ref, exc)
    latest = ref.delta_table(spark).history(1).select("version").first()
    if latest is None:
        raise ConfigError(f"{ref}: the Delta table has no history; is it a Delta table?")
    detail = spark.sql(f"DESCRIBE DETAIL {ref.sql}").select("numFiles").first()
    files = int(detail["numFiles"]) if detail is not None and detail["numFiles"] else 0
    return TableState(int(latest["version"]), files)


def _from_delta_log(spark: SparkSession, ref: TableRef) -> TableState:
    snapshot = newest_snapshot(spark, delta_log_of(spark, ref))
    version = int(snapshot.version())
    if version < 0:
        raise ConfigError(f"{ref}: the Delta table has no history; is it a Delta table?")
    checksum = snapshot.checksumOpt()  # written with each commit; numOfFiles runs jobs
    files = checksum.get().numFiles() if checksum.isDefined() else snapshot.numOfFiles()
    return TableState(version, int(files))
