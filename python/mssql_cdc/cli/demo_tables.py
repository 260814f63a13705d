"""`mssql-cdc demo --tables N`: the demo's story for N tables in one `fan_out` job.

Every table's stream bootstraps and keeps up; then, for four simulated days, the streams of
the last N // 2 tables stop (their job is paused) while the others run on, and the cleanup job
purges what the paused ones had not read. When the whole job runs again, only the paused
tables find their loss and re-snapshot; the others go on in their first generation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mssql_cdc.cli.demo_job import (
    DemoSummary,
    TableOutcome,
    Workload,
    latest_image,
    progress,
)
from mssql_cdc.core import checkpoint
from mssql_cdc.errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from mssql_cdc.emulator import Emulator

__all__ = ["MAX_TABLES", "conclude", "paused", "stream_story", "table_names"]

MAX_TABLES = 20
COLUMNS = ("order_id", "customer", "amount", "status")
RUN_TIMEOUT = 900.0


def table_names(tables: object) -> tuple[str, ...]:
    """The demo's table names for `tables` tables: dbo.orders alone, else dbo.orders_01...

    Raises:
        ConfigError: `tables` is not a whole number from 1 to 20.
    """
    if isinstance(tables, bool) or not isinstance(tables, int) or not 1 <= tables <= MAX_TABLES:
        raise ConfigError(
            f"--tables {tables!r}: pass a whole number of tables from 1 to {MAX_TABLES}"
        )
    if tables == 1:
        return ("dbo.orders",)
    return tuple(f"dbo.orders_{n:02d}" for n in range(1, tables + 1))


def paused(instances: tuple[str, ...]) -> tuple[str, ...]:
    """The capture instances whose streams stop during the simulated days: the last N // 2."""
    return instances[len(instances) - len(instances) // 2 :]


def stream_story(
    spark: SparkSession,
    options: Mapping[str, str],
    emulator: Emulator,
    workload: Workload,
    instances: tuple[str, ...],
    summary: DemoSummary,
) -> None:
    """Steps 3 to 5 of the demo's six, for many tables: stream all, pause some while cleanup
    runs, recover."""
    from mssql_cdc import fan_out

    root = str(summary.out_dir)
    facts = str(summary.out_dir / "facts")
    stopped = paused(instances)

    def run_job(label: str, step: int, running: tuple[str, ...]) -> None:
        job = fan_out(
            spark,
            [{"capture_instance": instance} for instance in running],
            options=options,
            facts_table=facts,
            root=root,
            trigger={"availableNow": True},
            bootstrap=True,
            on_data_loss="resnapshot",
        )
        if not job.await_termination(RUN_TIMEOUT):
            job.stop()
            raise TimeoutError(f"demo run {label} did not finish within {RUN_TIMEOUT:.0f} s")
        summary.runs += 1
        progress(
            step,
            f"run {summary.runs} of the job ({label}, {len(running)} of {len(instances)} "
            f"streams): source time {workload.clock:%Y-%m-%d %H:%M}",
        )

    progress(3, f"streaming {len(instances)} tables in one job with on_data_loss='resnapshot'")
    run_job("bootstrap", 3, instances)
    for _ in range(2):
        workload.advance(hours=6, commits=12 * len(instances))
        workload.idle_and_cleanup()
        run_job("steady", 3, instances)

    running = tuple(i for i in instances if i not in stopped)
    progress(
        4,
        f"the streams of {', '.join(stopped)} stop; 4 simulated days pass and CDC cleanup "
        f"purges their unread changes; the other {len(running)} run every two days",
    )
    for _ in range(2):
        for _ in range(4):
            workload.advance(hours=12, commits=10 * len(instances))
            workload.idle_and_cleanup()
        run_job("the others only", 4, running)

    progress(5, "the whole job runs again: the paused streams find their loss and re-snapshot")
    run_job("recovery", 5, instances)
    workload.advance(hours=6, commits=12 * len(instances))
    workload.idle_and_cleanup()
    run_job("steady", 5, instances)


def conclude(
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
    stopped = paused(instances)
    facts = spark.read.format("delta").load(str(summary.out_dir / "facts"))
    resnapshots = {r["app_id"] for r in facts.where("event = 'resnapshot'").collect()}
    for table, instance in zip(tables, instances, strict=True):
        state = checkpoint.read_state(str(summary.out_dir / "checkpoints" / instance))
        generation = state.generation if state is not None else 0
        bronze_path = str(summary.out_dir / "bronze" / instance)
        bronze = [r.asDict() for r in spark.read.format("delta").load(bronze_path).collect()]
        image = latest_image(bronze, "order_id")
        source = {row["order_id"]: row for row in emulator.rows(table)}
        equal = set(image) == set(source) and all(
            all(image[k][c] == source[k][c] for c in COLUMNS) for k in source
        )
        summary.tables.append(
            TableOutcome(
                table=table,
                app_id=instance,
                paused=instance in stopped,
                generation=generation,
                resnapshot=any(_of(app, instance) for app in resnapshots),
                bronze_rows=len(bronze),
                source_rows=len(source),
                equal=equal,
            )
        )
    summary.bronze_rows = sum(t.bronze_rows for t in summary.tables)
    summary.source_rows = sum(t.source_rows for t in summary.tables)
    summary.generation = max(t.generation for t in summary.tables)
    summary.equal = all(
        t.equal and t.resnapshot == t.paused and t.generation == int(t.paused)
        for t in summary.tables
    )


def _of(sink_app_id: Any, app_id: str) -> bool:
    """Whether a facts row's app_id (`A`, or the sink's `A.g<generation>`) is `app_id`'s."""
    if not isinstance(sink_app_id, str):
        return False
    base, marker, generation = sink_app_id.rpartition(".g")
    return sink_app_id == app_id or (marker != "" and base == app_id and generation.isdigit())
