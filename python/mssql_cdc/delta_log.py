"""What snapshots read back from a Delta table's log: commits found by `userMetadata`, and the
last `txnVersion` recorded for a `txnAppId`.

A full snapshot's commit has no transaction key; it is found again by its `userMetadata`
through the whole history (auto compaction or other writers may commit after it). A wave's
append is keyed, and Delta's transaction records say which waves the table holds.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mssql_cdc import tables
from mssql_cdc.errors import MssqlCdcError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["Commit", "find_commits", "recorded_txn_version"]


@dataclass(frozen=True, slots=True)
class Commit:
    """One commit of the history whose `userMetadata` is a JSON object."""

    version: int
    metadata: Mapping[str, Any]
    output_rows: int | None  # operationMetrics.numOutputRows


def find_commits(
    spark: SparkSession,
    table: tables.TableRef | str,
    matches: Callable[[Mapping[str, Any]], bool],
    *,
    needle: str | None = None,
) -> list[Commit]:
    """The commits whose parsed `userMetadata` satisfies `matches`, newest first.

    `needle`, when given, is a substring every wanted `userMetadata` holds; it only narrows what
    leaves the JVM, `matches` decides. A missing table has no commits.
    """
    from pyspark.sql import functions as F

    ref = tables.table_ref(table)
    if not ref.exists(spark):
        return []
    history = ref.delta_table(spark).history().where(F.col("userMetadata").isNotNull())
    if needle is not None:
        history = history.where(F.instr(F.col("userMetadata"), needle) > 0)
    found: list[Commit] = []
    for row in history.select("version", "userMetadata", "operationMetrics").collect():
        try:
            metadata = json.loads(row["userMetadata"])
        except json.JSONDecodeError:
            continue  # another writer's free text
        if not isinstance(metadata, dict) or not matches(metadata):
            continue
        metrics = row["operationMetrics"] or {}
        rows = metrics.get("numOutputRows")
        found.append(Commit(int(row["version"]), metadata, None if rows is None else int(rows)))
    return sorted(found, key=lambda c: c.version, reverse=True)


def recorded_txn_version(
    spark: SparkSession, table: tables.TableRef | str, app_id: str
) -> int | None:
    """The last `txnVersion` Delta recorded for `app_id` in the table; None without one.

    Raises:
        MssqlCdcError: the session has no JVM (Spark Connect), where Delta's log is out of reach.
    """
    ref = tables.table_ref(table)
    if not ref.exists(spark):
        return None
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:
        raise MssqlCdcError(
            f"{ref}: reading Delta transaction records needs a classic Spark session with a "
            "JVM; Spark Connect does not expose Delta's log"
        )
    location = spark.sql(f"DESCRIBE DETAIL {ref.sql}").collect()[0]["location"]
    delta_log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, location)
    empty = jvm.scala.Option.empty()
    recorded = delta_log.update(False, empty, empty).transactions().get(app_id)
    return int(recorded.get()) if recorded.isDefined() else None
