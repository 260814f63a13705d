"""B1-steady: change rows per second from the emulator through `stream(...).to_delta` into
bronze, in micro-batches of 100,000, with the Spark jobs each batch costs.

1,000,000 change rows (1,000 commits of 1,000 inserts) stream from an emulator file through
`stream(spark, options).to_delta(bronze, facts_table=...)` with `maxCommitsPerBatch=100` and
trigger availableNow: 10 micro-batches of 100,000 rows, each appended to bronze under its
transaction key and recorded by a facts row. The baseline is the plain read and append
(`b1_plain`): the same ranges of the same 10 batches read from the emulator through the
source's own partition reader in plain batch form, each appended with
`df.write.format("delta").mode("append")`; it isolates to_delta's own overhead from the cost
of the read. A third side, reported in the notes, appends ours' rows already held by Spark
(read back from ours' bronze and made DataFrames before its clock starts). Rounds alternate
the sides, each into new tables; the figure is the median of the rounds. B1-catch-up
(`b1_catchup`) streams the same file in one batch.

Spark jobs per batch, on the critical path and in total, and the time of the sink's steps come
from `b1_jobs` (decision 1002). Before the first round a small stream and a small append run
untimed, so neither side pays the JVM's first use of Delta's write path (class loading, code
generation) or Python worker start-up on its own.

The driver's peak memory is measured during ours: the Python driver's peak RSS (VmHWM, reset
before the run through /proc/self/clear_refs) and the JVM's peak heap (the sum of its heap
pools' peak usage, reset before the run), which is where Spark and Delta keep the batches.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import b1_jobs  # noqa: E402
import b1_plain  # noqa: E402
from report import Figure  # noqa: E402

ROWS = 1_000_000
PER_COMMIT = 1_000
BATCHES = 10
ROUNDS = 2
STEADY_TARGET = 0.6  # issue 37: one pass, steady


def build(path: Path, rows: int) -> None:
    """An emulator file holding `rows` change rows in commits of PER_COMMIT inserts."""
    from mssql_cdc.emulator import Emulator

    emu = Emulator.create(path, start="2026-09-28T13:50:00")
    emu.create_table(
        "dbo.orders",
        {"order_id": "int", "status": "nvarchar(20)", "amount": "decimal(18,2)"},
        primary_key="order_id",
    )
    emu.enable_cdc("dbo.orders")
    commits = rows // PER_COMMIT
    step = 50  # commits per call, so the Python lists stay small
    for first in range(0, commits, step):
        emu.commit_many(
            [
                [
                    ("insert", "dbo.orders", {"order_id": i, "status": "new", "amount": i % 1000})
                    for i in range(c * PER_COMMIT, (c + 1) * PER_COMMIT)
                ]
                for c in range(first, min(first + step, commits))
            ]
        )
    emu.close()


WHERE_THE_TIME_GOES = (
    "what ours does per batch that the plain read and append does not: the bronze append is "
    "the only read of the batch and observes its aggregates as it writes (decision 1350; "
    "nothing is cached); its transaction key makes Delta look the id up in the snapshot's "
    "computed state (4 Spark jobs per commit, run in the background after each commit, "
    "decision 0370, but on 2 shared cores they compete for CPU); then the facts row (a second "
    "Delta commit, made in the driver by deltalake without a Spark job, decision 1000), and the "
    "streaming engine's offset and commit logs; once per run: creating facts and bronze, "
    "bronze's transaction version read once, and a Delta checkpoint of bronze at its 10th "
    "commit, in the last batch (Delta's default interval; the plain side's 10 appends are "
    "versions 0 to 9 and write none)"
)


def _status_kib(pid: int | str, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"/proc/{pid}/status has no {field}")


def _reset_peak_rss(pid: int | str) -> bool:
    """Reset the process's VmHWM to its current RSS (Linux 4.0+); False where refused."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
        return True
    except OSError:
        return False


class Memory:
    """Peak memory of the driver: the Python process and the JVM it started."""

    def __init__(self, spark: Any) -> None:
        jvm = spark.sparkContext._jvm
        self._pools = [
            p
            for p in jvm.java.lang.management.ManagementFactory.getMemoryPoolMXBeans()
            if str(p.getType()) == "Heap memory"
        ]
        self.jvm_pid = int(jvm.java.lang.ProcessHandle.current().pid())

    def reset(self) -> bool:
        for pool in self._pools:
            pool.resetPeakUsage()
        return _reset_peak_rss("self") and _reset_peak_rss(self.jvm_pid)

    def peaks_mib(self) -> tuple[float, float, float]:
        """(Python driver peak RSS, JVM peak heap, JVM peak RSS), MiB."""
        heap = sum(int(p.getPeakUsage().getUsed()) for p in self._pools)
        return (
            _status_kib("self", "VmHWM") / 1024,
            heap / 2**20,
            _status_kib(self.jvm_pid, "VmHWM") / 2**10,
        )


def run_ours(spark: Any, options: dict[str, str], work: Path, rows: int) -> tuple[float, Any]:
    """Seconds from `to_delta` to the end of the availableNow query, and the query."""
    from mssql_cdc import stream

    started = time.perf_counter()
    query = stream(spark, options).to_delta(
        str(work / "bronze"),
        "b1",
        str(work / "ckpt"),
        str(work / "facts"),
        trigger={"availableNow": True},
    )
    if not query.awaitTermination(3600):
        query.stop()
        raise RuntimeError("B1: the stream did not finish within an hour")
    seconds = time.perf_counter() - started
    streamed = sum(p["numInputRows"] for p in query.recentProgress)
    if streamed != rows:
        raise RuntimeError(f"B1: the stream read {streamed} rows, not {rows}")
    return seconds, query


def baseline_batches(spark: Any, bronze: str) -> list[Any]:
    """Ours' rows, batch by batch, as DataFrames held by Spark (made before the clock)."""
    from pyspark.sql import functions as F

    table = spark.read.format("delta").load(bronze)
    ids = sorted(r[0] for r in table.select("_batch_id").distinct().collect())
    frames = []
    for batch_id in ids:
        arrow = table.where(F.col("_batch_id") == batch_id).toArrow()
        frames.append(spark.createDataFrame(arrow))
    return frames


def run_baseline(frames: list[Any], target: Path) -> float:
    started = time.perf_counter()
    for frame in frames:
        frame.write.format("delta").mode("append").save(str(target))
    return time.perf_counter() - started


def warm_up(spark: Any, work: Path) -> None:
    """Untimed: the same code paths on 10,000 rows, so the rounds measure a warm session."""
    path = work / "warm.db"
    build(path, 10 * PER_COMMIT)
    options = {
        "captureInstance": "dbo_orders",
        "backend": "emulator",
        "emulatorPath": str(path),
        "numPartitions": "2",
        "maxCommitsPerBatch": "5",
    }
    for attempt in range(3):
        # Spark gives a new Python worker 10 s to connect back, which a loaded machine can miss
        try:
            run_ours(spark, options, work / f"warm{attempt}", 10 * PER_COMMIT)
            break
        except Exception as exc:  # untimed; retried, then re-raised
            if attempt == 2 or "connect back" not in str(exc):
                raise
            print(f"B1 warm-up: {exc.__class__.__name__}, retrying", flush=True)
    for frame in baseline_batches(spark, str(work / f"warm{attempt}" / "bronze")):
        frame.write.format("delta").mode("append").save(str(work / "warm-base"))
    b1_plain.register(spark)
    warm_offsets = b1_plain.plan_offsets(options, 2)
    b1_plain.run_plain(spark, options, warm_offsets, str(work / "warm-plain"))


def emulator_options(path: Path) -> dict[str, str]:
    """The source options every B1 run starts from: the emulator file at `path`."""
    return {"captureInstance": "dbo_orders", "backend": "emulator", "emulatorPath": str(path)}


def shortfall(plain_s: float, ours_s: float, target: float) -> list[str]:
    """The note of a missed ratio target (none when met), from the two sides' seconds."""
    if plain_s / ours_s >= target:
        return []
    return [
        f"target NOT met: ratio {plain_s / ours_s:.2f} against {target}; ours would need to be "
        f"{target * ours_s / plain_s:.1f} times faster"
    ]


def jobs_shortfall(runs: list[b1_jobs.RunJobs], most: float) -> list[str]:
    """The jobs target's note: critical-path jobs per batch (batch 0 left out: it opens the
    tables) outside the bronze step, whose keyed append (with its txn lookup) is the append's
    own."""
    later = [p for r in runs for p in r.profiles if p.batch_id > 0]
    if not later:
        return []
    outside = [p.critical_jobs - p.step_jobs.get("bronze", 0) for p in later]
    append = [p.step_jobs.get("bronze", 0) for p in later]
    beyond = sum(outside) / len(outside)
    verdict = "met" if beyond <= most else "NOT met"
    return [
        f"jobs target {verdict}: {beyond:.1f} Spark jobs per steady micro-batch (mean of "
        f"batches 2 to {BATCHES} of every round) on the critical path beyond the keyed "
        f"append's own {sum(append) / len(append):.1f} (target: at most {most:g})"
    ]


def show(figure: Figure) -> None:
    print(figure.summary())
    for note in figure.notes:
        print(" ", note)
    for line in figure.table:
        print(line)


def wait_for_warm_ups(timeout: float = 120.0) -> None:
    """Let the sink's background state computations of the last commits end, so their jobs
    fall in ours' window and not in the next side's."""
    import threading

    for thread in threading.enumerate():
        if thread.name.startswith("mssql_cdc-warm-"):
            thread.join(timeout)


def measure_ours(
    spark: Any, options: dict[str, str], work: Path, rows: int
) -> tuple[float, Any, b1_jobs.RunJobs, Path]:
    """Run ours once with its jobs and phases recorded; the plain counts are filled later.

    Also returns the folder its tables are in: `work`, or `work/retry<n>` for a run started
    over after a Python worker that did not connect back.
    """
    for attempt in range(3):
        used = work / f"retry{attempt}" if attempt else work
        with b1_jobs.PhaseLog() as phases:
            opened = b1_jobs.now_ms()
            try:
                seconds, query = run_ours(spark, options, used, rows)
            except Exception as exc:  # a worker that missed its 10 s to connect back: again
                if attempt == 2 or "connect back" not in str(exc):
                    raise
                print(f"B1: {exc.__class__.__name__} (connect back), run again", flush=True)
                continue
            wait_for_warm_ups()
            closed = b1_jobs.now_ms()
        break
    jobs = b1_jobs.jobs_between(spark, opened, closed)
    run_id = str(query.runId)
    profiles = b1_jobs.profile(jobs, run_id, phases.marks)
    progress = [dict(p["durationMs"]) for p in query.recentProgress]
    counted = b1_jobs.RunJobs(
        ours_critical=[p.critical_jobs for p in profiles],
        ours_total=len(jobs),
        plain_total=0,
        batches=len(profiles),
        profiles=profiles,
        progress=progress,
    )
    return seconds, query, counted, used


def measure_plain(
    spark: Any, options: dict[str, str], offsets: list[Any], target: str
) -> tuple[float, int]:
    """Seconds and Spark jobs of the plain read and append of the same batches."""
    opened = b1_jobs.now_ms()
    seconds = b1_plain.run_plain(spark, options, offsets, target)
    time.sleep(0.5)  # the status store records a job's submission on its listener thread
    return seconds, len(b1_jobs.jobs_between(spark, opened, b1_jobs.now_ms()))


def job_notes(runs: list[b1_jobs.RunJobs], batches: int) -> list[str]:
    """The job counts of every round, then their medians, side by side with the plain side."""
    per_round = [r.per_batch() for r in runs]
    critical = statistics.median(c for c, _, _ in per_round)
    total = statistics.median(t for _, t, _ in per_round)
    plain = statistics.median(p for _, _, p in per_round)
    return [
        f"Spark jobs per micro-batch (median of the rounds' means over {batches} batch(es)): "
        f"ours {critical:.1f} on the critical path (inside the sink's call), {total:.1f} in "
        f"total (with the background state warm-ups, decision 0370); the plain read and append "
        f"{plain:.1f}; ours beyond the plain side: {critical - plain:.1f} on the critical path, "
        f"{total - plain:.1f} in total",
        f"ours, critical-path jobs per batch, each round: {[r.ours_critical for r in runs]}; "
        f"total jobs per round {[r.ours_total for r in runs]}; plain jobs per round "
        f"{[r.plain_total for r in runs]}",
    ]


def run(rows: int = ROWS, rounds: int = ROUNDS) -> Figure:
    from mssql_cdc.spark import local_session

    spark = local_session("mssql-cdc-bench-b1-stream")
    ours_s: list[float] = []
    base_s: list[float] = []
    plain_s: list[float] = []
    floors: list[tuple[float, float, float]] = []
    runs: list[b1_jobs.RunJobs] = []
    try:
        memory = Memory(spark)
        with tempfile.TemporaryDirectory(prefix="b1s-") as tmp:
            path = Path(tmp) / "e.db"
            built = time.perf_counter()
            build(path, rows)
            build_s = time.perf_counter() - built
            options = {
                **emulator_options(path),
                "numPartitions": "2",
                "maxCommitsPerBatch": str(rows // PER_COMMIT // BATCHES),
            }
            warm_up(spark, Path(tmp))
            offsets = b1_plain.plan_offsets(options, BATCHES)
            frames: list[Any] = []
            peaks = (0.0, 0.0, 0.0)
            reset_ok = False
            for n in range(rounds):
                work = Path(tmp) / f"ours{n}"
                if n == 0:
                    reset_ok = memory.reset()
                seconds, _query, counted, used = measure_ours(spark, options, work, rows)
                if n == 0:
                    peaks = memory.peaks_mib()
                ours_s.append(seconds)
                if not frames:
                    frames = baseline_batches(spark, str(used / "bronze"))
                    if sum(f.count() for f in frames) != rows or len(frames) != BATCHES:
                        raise RuntimeError("B1: the baseline's batches do not hold ours' rows")
                base_s.append(run_baseline(frames, Path(tmp) / f"base{n}"))
                seconds, plain_jobs = measure_plain(
                    spark, options, offsets, str(Path(tmp) / f"plain{n}")
                )
                plain_s.append(seconds)
                floors.append(
                    b1_plain.run_spec_floor(spark, options, offsets, str(Path(tmp) / f"floor{n}"))
                )
                runs.append(replace(counted, plain_total=plain_jobs))
                print(
                    f"B1-steady round {n}: ours {ours_s[-1]:.1f} s, baseline {base_s[-1]:.1f} s, "
                    f"plain read + append {plain_s[-1]:.1f} s, jobs per batch "
                    f"{runs[-1].per_batch()}, peaks {peaks}",
                    flush=True,
                )
    finally:
        spark.stop()
    ours = statistics.median(ours_s)
    base = statistics.median(base_s)
    plain = statistics.median(plain_s)
    trigger_ms = [statistics.median(d["triggerExecution"] for d in r.progress[1:]) for r in runs]
    plain_batch_ms = [1000 * s / BATCHES for s in plain_s]
    beyond = statistics.median(t - p for t, p in zip(trigger_ms, plain_batch_ms, strict=True))
    short = shortfall(plain, ours, STEADY_TARGET) + jobs_shortfall(runs, 1)
    return Figure(
        key="B1-steady",
        title=f"steady stream: {rows:,} emulator change rows in {BATCHES} micro-batches "
        "through to_delta into bronze, with facts",
        unit="rows/s",
        ours=rows / ours,
        baseline=rows / plain,
        baseline_name=f"plain read and append of the same ranges in {BATCHES} batches (b1_plain)",
        target=f"ratio >= {STEADY_TARGET} (higher is better); at most 1 critical-path job per "
        "batch beyond the plain append's",
        notes=[
            f"{BATCHES} micro-batches of {rows // BATCHES:,} rows (maxCommitsPerBatch="
            f"{options['maxCommitsPerBatch']}, numPartitions=2, availableNow), bronze and facts "
            f"on local disk; median of {rounds} alternating rounds on the shared local[2] session",
            *job_notes(runs, BATCHES),
            f"time per trigger, batches 2 to {BATCHES} (median ms, each round): ours "
            f"{[round(t) for t in trigger_ms]}; the plain side's mean ms per batch "
            f"{[round(p) for p in plain_batch_ms]}; ours beyond the plain side {beyond:,.0f} ms",
            f"ours, s per round (to_delta to termination, including query start-up, planning, "
            f"the emulator read, the facts commits): {[round(s, 1) for s in ours_s]}; the plain "
            f"read and append (b1_plain: the same ranges read from the emulator through the "
            f"source's partition reader in plain batch form, appended plainly), s per round "
            f"{[round(s, 1) for s in plain_s]}",
            f"third side, a plain Delta append of ours' rows already held by Spark "
            f"(createDataFrame from Arrow before the clock), s per round "
            f"{[round(s, 1) for s in base_s]}: {rows / base:,.0f} rows/s, ratio ours / it "
            f"{base / ours:.2f}",
            f"ours, ms per trigger (first round): "
            f"{[d['triggerExecution'] for d in runs[0].progress] if runs else []}",
            f"driver peak memory during ours' first round: Python driver peak RSS "
            f"{peaks[0]:,.0f} MiB; JVM peak heap {peaks[1]:,.0f} MiB (sum of the heap pools' "
            f"peaks); JVM peak RSS {peaks[2]:,.0f} MiB"
            + ("" if reset_ok else " (peaks since process start: clear_refs refused)"),
            f"building the emulator file took {build_s:.0f} s (not measured)",
            WHERE_THE_TIME_GOES,
            *b1_plain.floor_notes(floors, plain, ours),
            *short,
        ],
        table=[
            f"Where the time goes per trigger (batches 2 to {BATCHES} of every round; the "
            "sink's steps from its DEBUG phase records, the engine's from the progress):",
            "",
            *b1_jobs.where_the_time_goes(runs, skip_first=True),
        ],
    )


if __name__ == "__main__":
    import os

    show(run(int(os.environ.get("B1_ROWS", ROWS)), int(os.environ.get("B1_ROUNDS", ROUNDS))))
