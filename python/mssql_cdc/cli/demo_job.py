"""The main job on the embedded emulator: stream, lose data to CDC cleanup, recover on its own.

`run_demo` creates an emulator database with an orders workload, streams it into local Delta
tables with `on_data_loss="resnapshot"`, stops the stream while simulated days pass and the
cleanup job purges unread changes, restarts, and shows the recovery: the new generation, the
facts' 'resnapshot' row with its gap, and bronze's latest image equal to the source table.
"""

from __future__ import annotations

import logging
import random
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from mssql_cdc.cli.demo_output import prepare_out_dir
from mssql_cdc.core import checkpoint
from mssql_cdc.core.progress import Progress, Stage, report
from mssql_cdc.emulator import Emulator
from mssql_cdc.emulator.profiles import Profile

__all__ = [
    "APP_ID",
    "TABLE",
    "DemoSummary",
    "TableOutcome",
    "Workload",
    "create_orders_table",
    "latest_image",
    "run_demo",
]

log = logging.getLogger(__name__)

TABLE = "dbo.orders"
APP_ID = "orders-demo"
START = datetime(2026, 9, 24, 8, 0, 0)
RETENTION_MINUTES = 3 * 24 * 60
NO_MATPLOTLIB = 'matplotlib is not installed (pip install "mssql-cdc[demo]")'
STATUSES = ("new", "paid", "shipped", "returned")
STEPS = 6
DemoBackend = Literal["emulator", "mssql-python", "pymssql"]


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


class Workload:
    """A seeded orders workload over simulated time: inserts, updates and deletes in `tables`
    (each of the demo's orders shape), one table chosen at random per transaction."""

    def __init__(self, emulator: Emulator, seed: int, tables: tuple[str, ...] = (TABLE,)) -> None:
        self.emulator = emulator
        self.random = random.Random(seed)
        self.tables = tables
        self.live: dict[str, list[int]] = {table: [] for table in tables}
        self.next_id = dict.fromkeys(tables, 1)
        self.clock = START

    def advance(self, hours: float, commits: int) -> None:
        step = timedelta(hours=hours) / max(commits, 1)
        for _ in range(commits):
            self.clock += step
            self.emulator.commit(self._transaction(), at=self.clock)

    def _transaction(self) -> list[tuple[Any, ...]]:
        # One table draws nothing for the choice, so the one-table demo's rows stay the same.
        table = self.tables[0] if len(self.tables) == 1 else self.random.choice(self.tables)
        live = self.live[table]
        changes: list[tuple[Any, ...]] = []
        for _ in range(self.random.randint(1, 4)):
            roll = self.random.random()
            if roll < 0.5 or len(live) < 5:
                order_id = self.next_id[table]
                self.next_id[table] += 1
                live.append(order_id)
                row = {
                    "order_id": order_id,
                    "customer": f"customer-{self.random.randint(1, 40):02d}",
                    "amount": round(self.random.uniform(5, 500), 2),
                    "status": "new",
                }
                changes.append(("insert", table, row))
            elif roll < 0.85:
                order_id = self.random.choice(live)
                status = self.random.choice(STATUSES)
                changes.append(("update", table, {"order_id": order_id, "status": status}))
            else:
                order_id = live.pop(self.random.randrange(len(live)))
                changes.append(("delete", table, {"order_id": order_id}))
        return changes

    def idle_and_cleanup(self) -> None:
        """SQL Server's capture job marks quiet time and its cleanup job runs on schedule."""
        self.clock += timedelta(minutes=1)
        self.emulator.idle(at=self.clock)
        self.emulator.run_cleanup_job()


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
    the last `tables // 2` of them stop during the simulated days (`demo_tables.py`).
    Each step is an INFO progress record of the logger `mssql_cdc.cli.demo_job`; `verbose`
    lets Spark print its start-up lines and warnings. `profile` is the emulator's server
    (docs/emulator.md, 'Profiles'): on `realistic` the capture job lags the workload by a cycle.

    Raises:
        ConfigError: `tables` is not 1 to 20, or `out_dir` is not a folder the demo may empty
            (see `demo_output.prepare_out_dir`; `force` allows a non-empty folder it did not
            make); nothing was deleted or started.
    """
    from mssql_cdc import stream
    from mssql_cdc.cli import demo_tables
    from mssql_cdc.spark import local_session

    names = demo_tables.table_names(tables)
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
            _stream_story(cdc, emulator, workload, instances[0], paths, summary)
        else:
            demo_tables.stream_story(spark, options, emulator, workload, instances, summary)
    progress(6, "checking bronze against the source table")
    if tables == 1:
        _conclude(spark, emulator, paths, summary)
        summary.chart = _chart(summary, out / "retention-headroom.png")
    else:
        demo_tables.conclude(spark, emulator, names, instances, summary)
    emulator.close()
    verdict = "equals" if summary.equal else "differs from"
    progress(STEPS, f"done: bronze's latest image {verdict} the source table", finished=True)
    return summary


def create_orders_table(emulator: Emulator, table: str) -> str:
    """Create `table` in the demo's orders shape, enable CDC on it; its capture instance."""
    emulator.create_table(
        table,
        {
            "order_id": "int",
            "customer": "nvarchar(40)",
            "amount": "decimal(12,2)",
            "status": "varchar(12)",
        },
        primary_key="order_id",
    )
    return emulator.enable_cdc(table)


def _source(path: Path, backend: DemoBackend, cleanup: ExitStack) -> dict[str, str]:
    """The source options reading `path` through `backend`; a served file stops with `cleanup`."""
    if backend == "emulator":
        progress(2, "backend: emulator (in process)")
        return {"backend": "emulator", "emulatorPath": str(path)}
    from mssql_cdc.emulator.serve import serve

    server = cleanup.enter_context(serve(path))
    progress(2, f"backend: {backend} over TDS to the emulator at {server.host}:{server.port}")
    return {"backend": backend, "connectionString": server.connection_string(backend)}


def _stream_story(
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
        state = checkpoint.read_state(paths["checkpoint"])
        generation = state.generation if state is not None else 0
        progress(
            step,
            f"run {summary.runs} of to_delta ({label}): generation {generation}, "
            f"source time {workload.clock:%Y-%m-%d %H:%M}",
        )

    progress(3, "streaming with on_data_loss='resnapshot' while the workload runs")
    run_once("bootstrap", 3)
    for _ in range(4):
        workload.advance(hours=6, commits=12)
        workload.idle_and_cleanup()
        run_once("steady", 3)

    progress(4, "the job stops; 4 simulated days pass and CDC cleanup purges unread changes")
    for _ in range(8):
        workload.advance(hours=12, commits=10)
        workload.idle_and_cleanup()
    progress(4, f"{instance} now begins at {emulator.min_lsn(instance)}")

    progress(5, "the job restarts: the pre-flight finds the loss and re-snapshots")
    run_once("recovery", 5)
    for _ in range(2):
        workload.advance(hours=6, commits=12)
        workload.idle_and_cleanup()
        run_once("steady", 5)


def _conclude(spark: Any, emulator: Emulator, paths: dict[str, str], summary: DemoSummary) -> None:
    state = checkpoint.read_state(paths["checkpoint"])
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
    image = latest_image(bronze, "order_id")
    source = {row["order_id"]: row for row in emulator.rows(TABLE)}
    summary.source_rows = len(source)
    columns = ("order_id", "customer", "amount", "status")
    summary.equal = set(image) == set(source) and all(
        all(image[k][c] == source[k][c] for c in columns) for k in source
    )


def _chart(summary: DemoSummary, path: Path) -> Path | None:
    if not summary.headroom:
        return None
    try:
        import matplotlib
    except ImportError:  # the `demo` extra draws; the story itself needs no matplotlib
        return None

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def hours(moment: datetime) -> float:  # simulated hours since the workload began
        return (moment - START).total_seconds() / 3600

    fig, ax = plt.subplots(figsize=(9, 4.5))
    for generation in sorted({g for _, _, g in summary.headroom}):
        points = [(t, h) for t, h, g in summary.headroom if g == generation]
        ax.plot(
            [hours(t) for t, _ in points],
            [h for _, h in points],
            marker="o",
            label=f"generation {generation}",
        )
    event = summary.resnapshot
    if event and event.get("lost_from_ts") and event.get("lost_to_ts"):
        ax.axvspan(
            hours(event["lost_from_ts"]),
            hours(event["lost_to_ts"]),
            color="tab:red",
            alpha=0.15,
            label="changes lost to CDC cleanup",
        )
        ax.axvline(hours(event["lost_to_ts"]), color="tab:red", linestyle="--")
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xlabel(f"simulated hours since {START:%Y-%m-%d %H:%M} UTC (source commit time)")
    ax.set_ylabel("retention headroom (hours)")
    ax.set_title("mssql-cdc demo: retention headroom per micro-batch, and the loss")
    ax.legend(loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
