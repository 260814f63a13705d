"""B1's machine-independent figures: Spark jobs per micro-batch, and where a trigger's time goes.

Jobs come from the driver's own status store (the records Spark's UI shows, kept whether the
UI runs or not), read through py4j after a run: each job's id, group and submission time. The
streaming engine runs a query's micro-batches on one thread whose job group is the query's run
id, so a job of that group ran inside the micro-batch, on its critical path (the sink's reads
and appends, and Delta's state reconstruction when an append had to wait for it); the sink's
background warm-ups (decision 0370) run on a thread of their own, without a group. The plain
baseline's jobs are counted in its time window.

Phases come from the sink's DEBUG records on `mssql_cdc.sink.phases` ("<batch> <step>" as each
step starts), collected here by a handler, and from the streaming progress (`durationMs`).
"""

from __future__ import annotations

import itertools
import logging
import statistics
import time
from dataclasses import dataclass
from typing import Any

PHASE_LOGGER = "mssql_cdc.sink.phases"

# The sink's steps in order, with what each holds (see sink/writer.py).
STEPS = {
    "enter": "open tables (first batch), rewind check, bronze's txn version (first batch)",
    "bronze": "bronze: schema check and keyed append, the one read, observed (with its txn lookup)",
    "replay": "a replay's second read for its aggregates (a skipped append only)",
    "files": "scan the reader's metrics and event files",
    "facts": "facts: event replay check and keyed append (with its txn lookup)",
    "cleanup": "remove the files",
}


@dataclass(frozen=True)
class Job:
    job_id: int
    group: str | None
    submitted_ms: int
    description: str


def now_ms() -> int:
    return int(time.time() * 1000)


def jobs_between(spark: Any, start_ms: int, end_ms: int) -> list[Job]:
    """The driver's jobs submitted in [start_ms, end_ms], oldest first."""
    store = spark.sparkContext._jsc.sc().statusStore()
    listed = store.jobsList(None)
    found = []
    for index in range(listed.size()):
        data = listed.apply(index)
        submitted = data.submissionTime()
        if not submitted.isDefined():
            continue
        at = int(submitted.get().getTime())
        if start_ms <= at <= end_ms:
            group = data.jobGroup()
            description = data.description()
            found.append(
                Job(
                    job_id=int(data.jobId()),
                    group=str(group.get()) if group.isDefined() else None,
                    submitted_ms=at,
                    description=str(description.get()) if description.isDefined() else "",
                )
            )
    return sorted(found, key=lambda j: j.job_id)


class PhaseLog(logging.Handler):
    """Collects the sink's phase records: (time in ms, batch id, step)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.marks: list[tuple[int, int, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        batch, step = record.getMessage().split(" ", 1)
        self.marks.append((int(record.created * 1000), int(batch), step))

    def __enter__(self) -> PhaseLog:
        logger = logging.getLogger(PHASE_LOGGER)
        logger.setLevel(logging.DEBUG)
        logger.addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        logger = logging.getLogger(PHASE_LOGGER)
        logger.removeHandler(self)
        logger.setLevel(logging.NOTSET)


@dataclass(frozen=True)
class BatchProfile:
    """One micro-batch of ours: its jobs and the time of each sink step."""

    batch_id: int
    critical_jobs: int  # jobs of the query's group submitted inside this batch's sink call
    step_ms: dict[str, int]
    step_jobs: dict[str, int]


def profile(jobs: list[Job], run_id: str, marks: list[tuple[int, int, str]]) -> list[BatchProfile]:
    """Each batch's sink steps with their times and the critical-path jobs submitted in them."""
    batches: dict[int, list[tuple[int, str]]] = {}
    for at, batch, step in marks:
        batches.setdefault(batch, []).append((at, step))
    found = []
    for batch, steps in sorted(batches.items()):
        steps.sort()
        step_ms: dict[str, int] = {}
        step_jobs: dict[str, int] = {}
        for (at, step), (until, _next) in itertools.pairwise(steps):
            step_ms[step] = step_ms.get(step, 0) + (until - at)
            inside = [j for j in jobs if j.group == run_id and at <= j.submitted_ms < until]
            step_jobs[step] = step_jobs.get(step, 0) + len(inside)
        found.append(
            BatchProfile(
                batch_id=batch,
                critical_jobs=sum(step_jobs.values()),
                step_ms=step_ms,
                step_jobs=step_jobs,
            )
        )
    return found


@dataclass(frozen=True)
class RunJobs:
    """The job counts of one run of ours and of its plain baseline."""

    ours_critical: list[int]  # per batch
    ours_total: int  # every job in the run's window: the critical ones, warm-ups, query start
    plain_total: int
    batches: int
    profiles: list[BatchProfile]
    progress: list[dict[str, int]]  # each trigger's durationMs

    def per_batch(self) -> tuple[float, float, float]:
        """(ours on the critical path, ours in total, plain) per batch, means."""
        return (
            sum(self.ours_critical) / self.batches,
            self.ours_total / self.batches,
            self.plain_total / self.batches,
        )


def where_the_time_goes(runs: list[RunJobs], *, skip_first: bool) -> list[str]:
    """Markdown rows: the median ms and mean jobs per trigger of each phase, over every batch
    of every run (the first batch of each run left out when `skip_first`: it opens tables)."""
    profiles = [p for r in runs for p in r.profiles if not (skip_first and p.batch_id == 0)]
    progress = [d for r in runs for i, d in enumerate(r.progress) if not (skip_first and i == 0)]
    if not profiles:
        return []

    def med(values: list[int]) -> str:
        return f"{statistics.median(values):,.0f}" if values else "-"

    rows = ["| phase | ms per trigger (median) | critical-path jobs per trigger (mean) |"]
    rows.append("|---|---|---|")

    def engine(name: str) -> str:
        return f"| streaming engine: {name} | {med([d.get(name, 0) for d in progress])} | 0 |"

    rows += [engine(name) for name in ("latestOffset", "queryPlanning", "walCommit")]
    for step, meaning in STEPS.items():
        ms = [p.step_ms.get(step, 0) for p in profiles]
        jobs = [p.step_jobs.get(step, 0) for p in profiles]
        rows.append(f"| sink: {meaning} | {med(ms)} | {sum(jobs) / len(jobs):.1f} |")
    sink_ms = [sum(p.step_ms.values()) for p in profiles]
    add_ms = [d.get("addBatch", 0) for d in progress]
    rows.append(
        f"| addBatch beyond the sink call (the batch's DataFrame, foreachBatch) | "
        f"{med([a - s for a, s in zip(add_ms, sink_ms, strict=False)])} | - |"
    )
    rows.append(engine("commitOffsets"))
    whole = med([d.get("triggerExecution", 0) for d in progress])
    jobs = sum(p.critical_jobs for p in profiles) / len(profiles)
    rows.append(f"| whole trigger (triggerExecution) | {whole} | {jobs:.1f} |")
    return rows
