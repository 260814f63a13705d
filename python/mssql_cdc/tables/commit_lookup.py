"""Commits of a Delta table found again by their `userMetadata`.

A full snapshot's commit has no transaction key; it is found again by its `userMetadata`
through the whole history (auto compaction or other writers may commit after it). A wave's
commit is found the same way, to write the facts a crash left out.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mssql_cdc.tables import refs as tables

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["Commit", "find_commits"]


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
    newest: int | None = None,
) -> list[Commit]:
    """The commits whose parsed `userMetadata` satisfies `matches`, newest first.

    `needle`, when given, is a substring every wanted `userMetadata` holds; it only narrows what
    leaves the JVM, `matches` decides. `newest`, when given, looks at only that many of the
    newest commits (Delta then reads only their log entries). A missing table has no commits.
    """
    from pyspark.sql import functions as F

    ref = tables.table_ref(table)
    if not ref.exists(spark):
        return []
    log = ref.delta_table(spark)
    history = log.history() if newest is None else log.history(newest)
    history = history.where(F.col("userMetadata").isNotNull())
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
