"""The main job on the embedded emulator: stream, lose data to CDC cleanup, recover on its own.

`run_demo` creates an emulator database with an orders workload, streams it into local Delta
tables with `on_data_loss="resnapshot"`, stops the stream while simulated days pass and the
cleanup job purges unread changes, restarts, and shows the recovery: the new generation, the
facts' 'resnapshot' row with its gap, and bronze's latest image equal to the source table.

With N tables the story is the same in one `fan_out` job: every table's stream bootstraps and
keeps up; then, for four simulated days, the streams of the last N // 2 tables stop (their job
is paused) while the others run on, and the cleanup job purges what the paused ones had not
read. When the whole job runs again, only the paused tables find their loss and re-snapshot;
the others go on in their first generation.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from mssql_cdc.cli.demo_chart import headroom_chart
from mssql_cdc.cli.demo_outcome import DemoSummary, conclude_table, conclude_tables
from mssql_cdc.cli.demo_output import prepare_out_dir
from mssql_cdc.cli.demo_workload import (
    RETENTION_MINUTES,
    START,
    TABLE,
    Workload,
    create_orders_table,
    paused_instances,
    table_names,
)
from mssql_cdc.core import Progress, Stage, read_state, report
from mssql_cdc.emulator import Emulator, Profile

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["APP_ID", "progress", "run_demo"]

log = logging.getLogger(__name__)

APP_ID = "orders-demo"
STEPS = 6
RUN_TIMEOUT = 900.0
DemoBackend = Literal["emulator", "mssql-python", "pymssql"]


def progress(step: int, message: str, *, finished: bool = False) -> None:
    """One INFO progress record of the demo: `message`, at `step` of its six."""
    stage: Stage = "finished" if finished else "started" if step == 1 else "advanced"
    report(log, Progress("demo", "demo", stage, step, STEPS, "steps"), "%s", message)


def run_demo(
    out_dir: str | Path = "demo-output",
    *,
    seed: int = 18,
    force: bool = False,
    backend: DemoBackend = "emulator",
    tables: int = 1,
    verbose: bool = False,
    profile: Profile = "immediate",
) -> DemoSummary:
    """Run the whole demo in `out_dir` (emptied first) and return what it found.

    `backend` is how the stream reads the emulator: in process, or over TDS through a real
    SQL Server driver (the emulator file is then served on 127.0.0.1 for the demo's length).
    `tables` above 1 streams that many tables in one `fan_out` job, and only the streams of
    the last `tables // 2` of them stop during the simulated days.
    Each step is an INFO progress record of the logger `mssql_cdc.cli.demo_job`; `verbose`
    lets Spark print its start-up lines and warnings. `profile` is the emulator's server
    (docs/emulator.md, 'Profiles'): on `realistic` the capture job lags the workload by a cycle.

    Raises:
        ConfigError: `tables` is not 1 to 20, or `out_dir` is not a folder the demo may empty
            (see `demo_output.prepare_out_dir`; `force` allows a non-empty folder it did not
            make); nothing was deleted or started.
    """
    from mssql_cdc import stream
    from mssql_cdc.spark import local_session

    names = table_names(tables)
    out = prepare_out_dir(out_dir, force=force)
    summary = DemoSummary(out_dir=out, backend=backend)
    paths = {name: str(out / name) for name in ("bronze", "facts", "checkpoint")}

    shown = TABLE if tables == 1 else f"{tables} tables ({names[0]} to {names[-1]})"
    progress(1, f"emulator database {out / 'emulator.db'} with {shown}")
    emulator = Emulator.create(
        out / "emulator.db",
        start=START.isoformat(),
        retention_minutes=RETENTION_MINUTES,
        profile=profile,
    )
    instances = tuple(create_orders_table(emulator, name) for name in names)
    workload = Workload(emulator, seed, names)
    # Four days of history first, so the cleanup job is in its steady state (it keeps the last
    # three days) before the stream starts, as on a server that has run CDC for a while.
    for _ in range(8):
        workload.advance(hours=12, commits=8 * tables)
        workload.idle_and_cleanup()

    progress(2, "starting Spark (local, with Delta Lake)")
    spark = local_session("mssql-cdc-demo", warehouse=out / "spark", verbose=verbose)
    with ExitStack() as cleanup:
        options = _source(out / "emulator.db", backend, cleanup)
        if tables == 1:
            cdc = stream(spark, {**options, "captureInstance": instances[0]})
            _table_story(cdc, emulator, workload, instances[0], paths, summary)
        else:
            _tables_story(spark, options, workload, instances, summary)
    progress(6, "checking bronze against the source table")
    if tables == 1:
        conclude_table(spark, emulator, paths, summary)
        summary.chart = headroom_chart(summary, out / "retention-headroom.png")
    else:
        conclude_tables(spark, emulator, names, instances, summary)
    emulator.close()
    verdict = "equals" if summary.equal else "differs from"
    progress(STEPS, f"done: bronze's latest image {verdict} the source table", finished=True)
    return summary


def _source(path: Path, backend: DemoBackend, cleanup: ExitStack) -> dict[str, str]:
    """The source options reading `path` through `backend`; a served file stops with `cleanup`."""
    if backend == "emulator":
        progress(2, "backend: emulator (in process)")
        return {"backend": "emulator", "emulatorPath": str(path)}
    from mssql_cdc.emulator import serve

    server = cleanup.enter_context(serve(path))
    progress(2, f"backend: {backend} over TDS to the emulator at {server.host}:{server.port}")
    return {"backend": backend, "connectionString": server.connection_string(backend)}


def _table_story(
    cdc: Any,
    emulator: Emulator,
    workload: Workload,
    instance: str,
    paths: dict[str, str],
    summary: DemoSummary,
) -> None:
    """Steps 3 to 5 of the demo's six: stream, lose changes to the cleanup job, recover,
    stream on."""

    def run_once(label: str, step: int) -> None:
        query = cdc.to_delta(
            paths["bronze"],
            APP_ID,
            paths["checkpoint"],
            paths["facts"],
            trigger={"availableNow": True},
            bootstrap=True,
            on_data_loss="resnapshot",
        )
        if not query.awaitTermination(600):
            query.stop()
            raise TimeoutError(f"demo run {label} did not finish within 600 s")
        summary.runs += 1
        state = read_state(paths["checkpoint"])
        generation = state.generation if state is not None else 0
        progress(
            step,
            f"run {summary.runs} of to_delta ({label}): generation {generation}, "
            f"source time {workload.clock:%Y-%m-%d %H:%M}",
        )

    def steady_runs(count: int, step: int) -> None:
        """`count` runs, each after six hours of commits, an idle entry and the cleanup job."""
        for _ in range(count):
            workload.advance(hours=6, commits=12)
            workload.idle_and_cleanup()
            run_once("steady", step)

    progress(3, "streaming with on_data_loss='resnapshot' while the workload runs")
    run_once("bootstrap", 3)
    steady_runs(4, 3)

    progress(4, "the job stops; 4 simulated days pass and CDC cleanup purges unread changes")
    for _ in range(8):
        workload.advance(hours=12, commits=10)
        workload.idle_and_cleanup()
    progress(4, f"{instance} now begins at {emulator.min_lsn(instance)}")

    progress(5, "the job restarts: the pre-flight finds the loss and re-snapshots")
    run_once("recovery", 5)
    steady_runs(2, 5)


def _tables_story(
    spark: SparkSession,
    options: Mapping[str, str],
    workload: Workload,
    instances: tuple[str, ...],
    summary: DemoSummary,
) -> None:
    """Steps 3 to 5 of the demo's six, for many tables: stream all, pause some while cleanup
    runs, recover."""
    from mssql_cdc import fan_out

    root = str(summary.out_dir)
    facts = str(summary.out_dir / "facts")
    stopped = paused_instances(instances)

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
