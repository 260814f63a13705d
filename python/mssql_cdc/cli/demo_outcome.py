"""What the demo did and found: its summary, and each bronze table checked against its source.

`latest_image` rebuilds the current rows from bronze in plain Python, as an oracle that shares
no code with the library; the conclusions compare it with the emulator's table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mssql_cdc.cli.demo_workload import TABLE, paused_instances
from mssql_cdc.core import read_state

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from mssql_cdc.emulator import Emulator

__all__ = ["DemoSummary", "TableOutcome", "conclude_table", "conclude_tables", "latest_image"]

COLUMNS = ("order_id", "customer", "amount", "status")


@dataclass
class DemoSummary:
    """What the demo did and found, for the closing summary and for tests."""

    out_dir: Path
    backend: str = "emulator"
    runs: int = 0
    generation: int = 0
    resnapshot: dict[str, Any] | None = None
    bronze_rows: int = 0
    source_rows: int = 0
    equal: bool = False
    chart: Path | None = None
    headroom: list[tuple[datetime, float, int]] = field(default_factory=list)
    tables: list[TableOutcome] = field(default_factory=list)


@dataclass(frozen=True)
class TableOutcome:
    """One table of a many-table demo: what its stream did and whether bronze equals it."""

    table: str
    app_id: str
    paused: bool
    generation: int
    resnapshot: bool
    bronze_rows: int
    source_rows: int
    equal: bool


def latest_image(bronze_rows: list[dict[str, Any]], key: str) -> dict[Any, dict[str, Any]]:
    """Rebuild the current rows from bronze rows in plain Python, keyed by `key`.

    From the newest whole snapshot P (op-0 rows), apply every change after P in
    (_start_lsn, _command_id, _seqval, _operation) order, NULLs first; a delete removes the
    key. (A table emptied before its re-snapshot has no op-0 rows; the demo's table never is.)
    """
    # An oracle: SQL Server's documented __$operation codes, not the library's Operation enum.
    snapshots = [r["_snapshot"] or r["_start_lsn"] for r in bronze_rows if r["_operation"] == 0]
    point = max(snapshots, default=None)
    rows = [
        r
        for r in bronze_rows
        if (r["_operation"] == 0 and (r["_snapshot"] or r["_start_lsn"]) == point)
        or (r["_operation"] in (1, 2, 4) and (point is None or r["_start_lsn"] > point))
    ]

    def order(r: dict[str, Any]) -> tuple[str, int, str, int]:
        return (r["_start_lsn"], r.get("_command_id") or -1, r["_seqval"] or "", r["_operation"])

    image: dict[Any, dict[str, Any]] = {}
    for r in sorted(rows, key=order):
        if r["_operation"] == 1:
            image.pop(r[key], None)
        else:
            image[r[key]] = r
    return image


def conclude_table(
    spark: SparkSession, emulator: Emulator, paths: dict[str, str], summary: DemoSummary
) -> None:
    """The one-table demo's generation, re-snapshot, headroom and bronze verdict into `summary`."""
    state = read_state(paths["checkpoint"])
    summary.generation = state.generation if state is not None else 0
    facts = spark.read.format("delta").load(paths["facts"])
    events = [r.asDict() for r in facts.where("event = 'resnapshot'").collect()]
    summary.resnapshot = events[-1] if events else None
    for r in facts.where("event IS NULL AND retention_headroom_hours IS NOT NULL").collect():
        moment = r["end_commit_ts"] or r["max_commit_ts"]
        if moment is not None:
            summary.headroom.append((moment, float(r["retention_headroom_hours"]), r["generation"]))
    summary.headroom.sort()
    bronze = [r.asDict() for r in spark.read.format("delta").load(paths["bronze"]).collect()]
    summary.bronze_rows = len(bronze)
    source = {row["order_id"]: row for row in emulator.rows(TABLE)}
    summary.source_rows = len(source)
    summary.equal = _same_rows(latest_image(bronze, "order_id"), source)


def conclude_tables(
    spark: SparkSession,
    emulator: Emulator,
    tables: tuple[str, ...],
    instances: tuple[str, ...],
    summary: DemoSummary,
) -> None:
    """Each table's generation, re-snapshot and bronze-against-source verdict into `summary`.

    `summary.equal` holds when every bronze equals its table and exactly the paused tables
    re-snapshotted into generation 1.
    """
    stopped = paused_instances(instances)
    facts = spark.read.format("delta").load(str(summary.out_dir / "facts"))
    resnapshots = {r["app_id"] for r in facts.where("event = 'resnapshot'").collect()}
    for table, instance in zip(tables, instances, strict=True):
        state = read_state(str(summary.out_dir / "checkpoints" / instance))
        generation = state.generation if state is not None else 0
        bronze_path = str(summary.out_dir / "bronze" / instance)
        bronze = [r.asDict() for r in spark.read.format("delta").load(bronze_path).collect()]
        source = {row["order_id"]: row for row in emulator.rows(table)}
        summary.tables.append(
            TableOutcome(
                table=table,
                app_id=instance,
                paused=instance in stopped,
                generation=generation,
                resnapshot=any(_written_for(app, instance) for app in resnapshots),
                bronze_rows=len(bronze),
                source_rows=len(source),
                equal=_same_rows(latest_image(bronze, "order_id"), source),
            )
        )
    summary.bronze_rows = sum(t.bronze_rows for t in summary.tables)
    summary.source_rows = sum(t.source_rows for t in summary.tables)
    summary.generation = max(t.generation for t in summary.tables)
    summary.equal = all(
        t.equal and t.resnapshot == t.paused and t.generation == int(t.paused)
        for t in summary.tables
    )


def _same_rows(
    image: Mapping[Any, Mapping[str, object]], source: Mapping[Any, Mapping[str, object]]
) -> bool:
    """Whether bronze's latest image holds the source's keys, each with the same columns."""
    return set(image) == set(source) and all(
        all(image[k][c] == source[k][c] for c in COLUMNS) for k in source
    )


def _written_for(sink_app_id: Any, app_id: str) -> bool:
    """Whether a facts row's app_id (`A`, or the sink's `A.g<generation>`) is `app_id`'s."""
    if not isinstance(sink_app_id, str):
        return False
    base, marker, generation = sink_app_id.rpartition(".g")
    return sink_app_id == app_id or (marker != "" and base == app_id and generation.isdigit())
