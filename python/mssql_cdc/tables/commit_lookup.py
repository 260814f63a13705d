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
from mssql_cdc.tables.delta_read import history as logged_history
from mssql_cdc.tables.reference import TableOutOfReach

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
    is parsed, `matches` decides. `newest`, when given, looks at only that many of the newest
    commits. A path table's history is read in process by deltalake; a catalog name's, or a
    path deltalake cannot open, by `DESCRIBE HISTORY`. A missing table has no commits.
    """
    ref = tables.table_ref(table)
    if not ref.exists(spark):
        return []
    try:
        history = _logged_history(ref, newest)
    except TableOutOfReach:
        history = _described_history(spark, ref, newest, needle)
    found: list[Commit] = []
    for version, text, metrics in history:
        if text is None or (needle is not None and needle not in text):
            continue
        try:
            metadata = json.loads(text)
        except json.JSONDecodeError:
            continue  # another writer's free text
        if not isinstance(metadata, dict) or not matches(metadata):
            continue
        rows = (metrics or {}).get("numOutputRows")
        found.append(Commit(version, metadata, None if rows is None else int(rows)))
    return sorted(found, key=lambda c: c.version, reverse=True)


_Entry = tuple[int, str | None, Mapping[str, Any] | None]


def _logged_history(ref: tables.TableRef, newest: int | None) -> list[_Entry]:
    entries = logged_history(ref, limit=newest)
    return [
        (int(e["version"]), _text(e.get("userMetadata")), _mapping(e.get("operationMetrics")))
        for e in entries
    ]


def _described_history(
    spark: SparkSession, ref: tables.TableRef, newest: int | None, needle: str | None
) -> list[_Entry]:
    from pyspark.sql import functions as F

    limit = "" if newest is None else f" LIMIT {int(newest)}"
    history = spark.sql(f"DESCRIBE HISTORY {ref.sql}{limit}")
    history = history.where(F.col("userMetadata").isNotNull())
    if needle is not None:  # narrows what leaves Spark
        history = history.where(F.instr(F.col("userMetadata"), needle) > 0)
    rows = history.select("version", "userMetadata", "operationMetrics").collect()
    return [(int(r["version"]), r["userMetadata"], r["operationMetrics"]) for r in rows]


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _mapping(value: object) -> Mapping[str, Any] | None:
    return value if isinstance(value, Mapping) else None
