"""S1: what `fan_out` costs as the table count grows: 1, 20, 100 and 500 small tables.

One emulator file per table count holds that many small tables (`dbo.t000`, ...: an int key
and an nvarchar, INITIAL rows each, CDC enabled), served over TDS (the pymssql backend, so the
server's live connections can be counted). Each round commits one transaction per table (one
update and one insert, the steady changes), then runs the whole job once:
`fan_out(..., trigger={"availableNow": True})` over every table, with one facts table, and
waits for it; so every stream reads and commits one micro-batch per round, the way a scheduled
`mssql-cdc run` job does. Round 0 is the first run (every bronze, checkpoint and state file is
created); the later rounds are steady.

Per round the driver is sampled every SAMPLE_S seconds: the Python driver's threads and open
files, the JVM's threads and open files, the Python processes under the JVM (each query of a
Python data source starts its own) and the TDS server's live connections; their peaks are
reported. Memory peaks are reset before each round: the Python driver's peak RSS (VmHWM) and
the JVM's peak heap (the sum of its heap pools' peaks). Spark jobs are counted from the job ids
the round's jobs got. The figure is per table and per batch (a round is one batch of every
stream): seconds per table per round, jobs per table per round.

Sizes chosen for a 2-core machine: tables of 20 rows and one commit per round, so a round
measures the job's fixed cost per stream rather than reading; 3 rounds at 1 and 20 tables, 2
at 100 and 500. On the shared development machine, 1, 20 and 100 tables took 37 minutes at a
load average of 20 to 30 and 6 minutes at 2 to 6; 500 tables took 20 and 27 minutes per round
at 6 to 9, with a 6 GiB driver, whose heap was then full (it has 10 GiB now). So the counts
can be measured apart: S1_TABLES=500 (or 1,20,100) measures those only. Each count's result
is stored on its own in `results/s1_fanout_counts.json` with the date, the load average and
the driver process it was measured in, as soon as the count ends (a remark on what its figures
showed may be added to the file by hand afterwards); the figure is then rendered
from every stored count, so measuring one count keeps the others' figures and a run cut short
keeps what it finished. One driver process measures the counts it is given in
turn: the "after" figures and the Python RSS peaks include what the earlier counts of that
process left behind. The driver's memory grows with the largest count (DRIVER_MEMORY).

S1_HISTOGRAM=<folder> writes the JVM's live objects by class after each round into that
folder (`jcmd GC.class_histogram`), to see what holds the driver's heap; S1_THREADS=1 prints
the thread groups each round added.

The headline ratio compares the steady per-table cost at the largest count measured (500)
with that at 20 tables (seconds per table per round): 1.0 is linear in tables, above 1 is
cheaper per table at scale.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from report import Figure, load_results, save_result, write_report  # noqa: E402

TABLE_COUNTS = (1, 20, 100, 500)
ROUNDS = {1: 3, 20: 3, 100: 2, 500: 2}
INITIAL = 20  # rows per table before the first round
# The sampler runs in the measured driver: at 500 tables, sampling every 0.5 s by reading
# every process's /proc stat file took a fifth of the driver's Python samples (py-spy).
SAMPLE_S = 2.0
MAX_STARTING = 2  # each query starts a Python process; 2 shared cores
TIMEOUT_S = 1800.0  # per round, at least; a larger count gets TIMEOUT_PER_TABLE_S per table
TIMEOUT_PER_TABLE_S = 20.0
DRIVER_MEMORY = {1: "2g", 20: "2g", 100: "2g", 500: "10g"}  # heap peaks: 2.2 GiB at 100, 6.6 at 500
COUNTS = "s1_fanout_counts.json"  # each count's stored result, in bench/results
THREADS: dict[str, int] = {}


def build(path: Path, tables: int) -> list[str]:
    """An emulator file with `tables` small captured tables; their capture instances."""
    from mssql_cdc.emulator import Emulator

    emu = Emulator.create(path, start="2026-09-28T13:50:00")
    names = [f"t{i:03d}" for i in range(tables)]
    for name in names:
        emu.create_table(f"dbo.{name}", {"id": "int", "v": "nvarchar(20)"}, primary_key="id")
        emu.enable_cdc(f"dbo.{name}")
    emu.commit_many(
        [
            [("insert", f"dbo.{name}", {"id": i, "v": "new"}) for i in range(INITIAL)]
            for name in names
        ]
    )
    emu.close()
    return [f"dbo_{name}" for name in names]


def change(path: Path, tables: int, round_no: int) -> None:
    """The round's steady changes: one commit per table, an update and an insert."""
    from mssql_cdc.emulator import Emulator

    emu = Emulator.open(path)
    try:
        emu.commit_many(
            [
                [
                    ("update", f"dbo.t{i:03d}", {"id": round_no % INITIAL, "v": f"r{round_no}"}),
                    ("insert", f"dbo.t{i:03d}", {"id": INITIAL + round_no, "v": "new"}),
                ]
                for i in range(tables)
            ]
        )
    finally:
        emu.close()


def thread_groups(spark: Any) -> dict[str, int]:
    """Live threads of the Python driver and the JVM, counted by name with digits dropped."""
    import re

    groups: dict[str, int] = {}
    names = [f"py:{t.name}" for t in threading.enumerate()]
    jvm = spark.sparkContext._jvm
    names += [f"jvm:{t.getName()}" for t in jvm.java.lang.Thread.getAllStackTraces().keySet()]
    for name in names:
        key = re.sub(r"[0-9a-f]{8}-[0-9a-f-]{27}|\d+", "#", name)
        groups[key] = groups.get(key, 0) + 1
    return groups


def _status(pid: int | str, field_name: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field_name + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"/proc/{pid}/status has no {field_name}")


def _open_files(pid: int | str) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def _python_children(pid: int) -> int:
    """Python processes whose parent is `pid` (the JVM's Python workers and daemons)."""
    count = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as file:
                stat = file.read()
        except OSError:
            continue
        # the command name is in parentheses and may hold spaces; state and parent pid follow
        close = stat.rindex(b")")
        parent = int(stat[close + 2 :].split(maxsplit=2)[1])
        if parent == pid and stat[stat.index(b"(") + 1 : close].startswith(b"python"):
            count += 1
    return count


@dataclass
class Peaks:
    py_threads: int = 0
    py_files: int = 0
    jvm_threads: int = 0
    jvm_files: int = 0
    workers: int = 0
    connections: int = 0

    def take(self, other: Peaks) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, max(getattr(self, name), getattr(other, name)))


class Sampler:
    """Samples the driver and the server every SAMPLE_S seconds while a round runs."""

    def __init__(self, jvm_pid: int, server: Any) -> None:
        self._jvm_pid = jvm_pid
        self._server = server
        self.peaks = Peaks()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="s1-sampler", daemon=True)

    def sample(self) -> Peaks:
        return Peaks(
            py_threads=_status("self", "Threads"),
            py_files=_open_files("self"),
            jvm_threads=_status(self._jvm_pid, "Threads"),
            jvm_files=_open_files(self._jvm_pid),
            workers=_python_children(self._jvm_pid),
            connections=self._server.live_connections(),
        )

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.peaks.take(self.sample())
            self._stop.wait(SAMPLE_S)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peaks.take(self.sample())


@dataclass
class Round:
    tables: int
    round_no: int
    seconds: float
    jobs: int
    py_rss_mib: float
    jvm_heap_mib: float
    peaks: Peaks
    after: Peaks  # the same figures once the round has ended: what stays behind
    failed: int  # streams that failed (their Python process never connected back in time)


@dataclass
class Scale:
    tables: int
    build_s: float
    rounds: list[Round] = field(default_factory=list)
    load_start: float = 0.0  # the load average when the count's first round began
    load_end: float = 0.0  # and when its last round ended

    def steady(self) -> list[Round]:
        return self.rounds[1:] or self.rounds

    def per_table_s(self) -> float:
        return statistics.median(r.seconds for r in self.steady()) / self.tables

    def per_table_jobs(self) -> float:
        return statistics.median(r.jobs for r in self.steady()) / self.tables


def last_job_id(spark: Any) -> int:
    """The highest job id the driver has given so far (-1 before any)."""
    store = spark.sparkContext._jsc.sc().statusStore()
    listed = store.jobsList(None)
    return max((int(listed.apply(i).jobId()) for i in range(listed.size())), default=-1)


class Memory:
    """Peak memory of the driver: the Python process's RSS and the JVM's heap."""

    def __init__(self, spark: Any) -> None:
        jvm = spark.sparkContext._jvm
        self._pools = [
            p
            for p in jvm.java.lang.management.ManagementFactory.getMemoryPoolMXBeans()
            if str(p.getType()) == "Heap memory"
        ]
        self.jvm_pid = int(jvm.java.lang.ProcessHandle.current().pid())

    def reset(self) -> None:
        for pool in self._pools:
            pool.resetPeakUsage()
        with contextlib.suppress(OSError):  # older kernels refuse it: peaks since start
            Path("/proc/self/clear_refs").write_text("5")

    def peaks_mib(self) -> tuple[float, float]:
        heap = sum(int(p.getPeakUsage().getUsed()) for p in self._pools)
        return _status("self", "VmHWM") / 1024, heap / 2**20


def class_histogram(pid: int, folder: Path, tables: int, round_no: int) -> None:
    """The JVM's live objects by class after a round (`jcmd GC.class_histogram`, a full GC
    first), its 40 largest classes into `folder`: what holds the driver's heap."""
    import subprocess

    folder.mkdir(parents=True, exist_ok=True)
    found = subprocess.run(
        ["jcmd", str(pid), "GC.class_histogram"], capture_output=True, text=True, check=False
    )
    head = "\n".join(found.stdout.splitlines()[:43])
    (folder / f"histogram-{tables}-round{round_no}.txt").write_text(head + "\n")


def run_round(
    spark: Any,
    memory: Memory,
    server: Any,
    instances: list[str],
    work: Path,
    round_no: int,
) -> Round:
    from mssql_cdc import fan_out
    from mssql_cdc.errors import StreamFailedError

    memory.reset()
    first_job = last_job_id(spark)
    with Sampler(memory.jvm_pid, server) as sampler:
        started = time.perf_counter()
        job = fan_out(
            spark,
            [{"capture_instance": c} for c in instances],
            options={"backend": "pymssql", "connectionString": server.connection_string("pymssql")},
            facts_table=str(work / "facts"),
            root=str(work / "lake"),
            trigger={"availableNow": True},
            max_starting=MAX_STARTING,
            on_failure="continue",
        )
        timeout = max(TIMEOUT_S, TIMEOUT_PER_TABLE_S * len(instances))
        try:
            if not job.await_termination(timeout):
                raise RuntimeError(f"S1: {len(instances)} tables did not finish in {timeout} s")
        except StreamFailedError:
            pass  # counted below: a stream whose Python process never connected back in time
        finally:
            job.stop()
        failed = len(job.failures)
        if failed == len(instances):
            raise job.failures[0]
        seconds = time.perf_counter() - started
    time.sleep(0.5)  # the status store records a job on its listener thread
    jobs = last_job_id(spark) - first_job
    rss, heap = memory.peaks_mib()
    time.sleep(2.0)  # let the ended queries' Python processes exit
    after = sampler.sample()
    if os.environ.get("S1_THREADS"):
        now = thread_groups(spark)
        grown = {k: v - THREADS.get(k, 0) for k, v in now.items() if v != THREADS.get(k, 0)}
        THREADS.clear()
        THREADS.update(now)
        print(f"S1 threads grown: {grown}", flush=True)
    if os.environ.get("S1_HISTOGRAM"):
        class_histogram(memory.jvm_pid, Path(os.environ["S1_HISTOGRAM"]), len(instances), round_no)
    result = Round(len(instances), round_no, seconds, jobs, rss, heap, sampler.peaks, after, failed)
    print(
        f"S1 {len(instances)} tables round {round_no}: {seconds:.1f} s, {jobs} jobs, "
        f"{failed} failed, "
        f"py rss {rss:.0f} MiB, jvm heap {heap:.0f} MiB, peaks {sampler.peaks}, after {after}",
        flush=True,
    )
    return result


def measure(spark: Any, memory: Memory, tables: int, rounds: int, tmp: Path) -> Scale:
    from mssql_cdc.emulator import serve

    tmp.mkdir(parents=True, exist_ok=True)
    path = tmp / f"s1-{tables}.db"
    built = time.perf_counter()
    instances = build(path, tables)
    scale = Scale(tables, time.perf_counter() - built, load_start=os.getloadavg()[0])
    work = tmp / f"lake-{tables}"
    with serve(path, max_connections=4096) as server:
        for round_no in range(rounds):
            change(path, tables, round_no)
            scale.rounds.append(run_round(spark, memory, server, instances, work, round_no))
    scale.load_end = os.getloadavg()[0]
    return scale


def warm_up(spark: Any, memory: Memory, tmp: Path) -> None:
    """Untimed: one table, one round, so the first measured round finds a warm JVM."""
    measure(spark, memory, 1, 1, tmp / "warm")


def scale_line(s: Scale) -> str:
    steady = s.steady()
    first = s.rounds[0]

    def med(values: list[float]) -> float:
        return statistics.median(values)

    return (
        f"| {s.tables} | {first.seconds:.1f} | {med([r.seconds for r in steady]):.1f} | "
        f"{s.per_table_s():.2f} | {med([r.jobs for r in steady]):.0f} | "
        f"{s.per_table_jobs():.1f} | {max(r.py_rss_mib for r in s.rounds):.0f} | "
        f"{max(r.jvm_heap_mib for r in s.rounds):.0f} | "
        f"{max(r.peaks.py_threads for r in s.rounds)} / {steady[-1].after.py_threads} | "
        f"{max(r.peaks.jvm_threads for r in s.rounds)} / {steady[-1].after.jvm_threads} | "
        f"{max(r.peaks.py_files for r in s.rounds)} / {steady[-1].after.py_files} | "
        f"{max(r.peaks.jvm_files for r in s.rounds)} / {steady[-1].after.jvm_files} | "
        f"{max(r.peaks.workers for r in s.rounds)} | "
        f"{max(r.peaks.connections for r in s.rounds)} / {steady[-1].after.connections} |"
    )


@dataclass(frozen=True)
class Measured:
    """One table count's stored result: what the figure shows of it, and when, at what load
    and in which driver process it was measured."""

    tables: int
    per_table_s: float  # steady seconds per table per round
    seconds: list[float]  # per round
    jobs: list[int]  # per round
    failed: list[int]  # streams failed, per round
    build_s: float
    row: str  # its line of the figure's table
    measured_at: str
    load: str  # the load average at its start and end
    driver: str  # the driver process: its memory and the counts it measured, in turn
    remark: str = ""  # what was found reading this count's figures, written after the run


def measured(s: Scale, driver: str) -> Measured:
    """A finished count as stored."""
    return Measured(
        tables=s.tables,
        per_table_s=s.per_table_s(),
        seconds=[round(r.seconds, 1) for r in s.rounds],
        jobs=[r.jobs for r in s.rounds],
        failed=[r.failed for r in s.rounds],
        build_s=s.build_s,
        row=scale_line(s),
        measured_at=f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        load=f"{s.load_start:.1f} to {s.load_end:.1f}",
        driver=driver,
    )


def load_counts(path: Path) -> dict[int, Measured]:
    """The stored counts by table count; none when the file is missing."""
    if not path.exists():
        return {}
    stored = json.loads(path.read_text())
    return {int(k): Measured(**v) for k, v in stored.items()}


def save_counts(path: Path, counts: dict[int, Measured]) -> None:
    """Store every count's result, by table count."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = {str(k): asdict(counts[k]) for k in sorted(counts)}
    path.write_text(json.dumps(text, indent=2, sort_keys=True) + "\n")


def merged(stored: dict[int, Measured], new: Measured) -> dict[int, Measured]:
    """The stored counts with `new` in place of its table count's older result."""
    return {**stored, new.tables: new}


def run(counts: tuple[int, ...] = ()) -> Figure:
    """The figure over every stored count, once `counts` tables (default $S1_TABLES,
    comma-separated, else TABLE_COUNTS) are measured again."""
    from mssql_cdc.spark import local_session
    from run import RESULTS

    given = tuple(int(c) for c in os.environ.get("S1_TABLES", "").split(",") if c)
    counts = counts or given or TABLE_COUNTS
    memory_size = max((DRIVER_MEMORY[c] for c in counts), key=lambda m: int(m[:-1]))
    driver = (
        f"driver memory {memory_size}, measuring {', '.join(str(c) for c in counts)} tables, "
        f"at commit {_commit()}"
    )

    stored = load_counts(RESULTS / COUNTS)
    spark = local_session("mssql-cdc-bench-s1-fanout", driver_memory=memory_size)
    try:
        memory = Memory(spark)
        with tempfile.TemporaryDirectory(prefix="s1-") as tmp:
            warm_up(spark, memory, Path(tmp))
            for tables in counts:
                scale = measure(spark, memory, tables, ROUNDS[tables], Path(tmp))
                stored = merged(stored, measured(scale, driver))
                save_counts(RESULTS / COUNTS, stored)
                keep(figure(list(stored.values())))  # a run cut short keeps what it finished
    finally:
        spark.stop()
    return figure(list(stored.values()))


def _commit() -> str:
    """The checked-out commit the figures are measured at ("unknown" outside git)."""
    import subprocess

    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True
    )
    return done.stdout.strip() or "unknown"


def keep(partial: Figure) -> None:
    """Store the figure so far and render REPORT.md from every stored figure, as run.py
    does at the end."""
    from run import BENCHMARKS, RESULTS

    save_result(RESULTS, "s1_fanout", partial.stamped())
    write_report(HERE / "REPORT.md", load_results(RESULTS, BENCHMARKS))


def figure(counts: list[Measured]) -> Figure:
    """The S1 figure of the measured table counts: the steady cost per table at the largest
    count (500 when measured) against that at 20 tables (else the smallest)."""
    counts = sorted(counts, key=lambda m: m.tables)
    by = {m.tables: m for m in counts}
    small, large = by.get(20, counts[0]), by.get(500, counts[-1])
    rounds_note = ", ".join(f"{m.tables}: {len(m.seconds)}" for m in counts)
    per_round = "; ".join(f"{m.tables} tables: {m.seconds} s, {m.jobs} jobs" for m in counts)
    return Figure(
        key="S1",
        title=f"fan_out over {', '.join(str(m.tables) for m in counts)} small tables, one "
        "availableNow run of the job per round of steady changes",
        unit="tables/s",
        ours=1 / large.per_table_s,
        baseline=1 / small.per_table_s,
        baseline_name=f"the same job over {small.tables} tables",
        target=f"ratio >= 1.0 (cost per table no higher at {large.tables} tables than at "
        f"{small.tables}: linear)",
        notes=[
            f"each table: an int key and an nvarchar, {INITIAL} rows before round 0, then per "
            "round one commit (an update and an insert); one emulator file per table count, "
            "served over TDS, read with the pymssql backend; root, one facts table, "
            f"max_starting={MAX_STARTING}, max_snapshots=2 (default), no bootstrap, "
            "availableNow; local[2] session",
            "each count measured apart, with its date, the load average at its start and "
            "end, and its driver process (the measured date above is the latest count's): "
            + "; ".join(
                f"{m.tables} tables: {m.measured_at}, load {m.load}, {m.driver}" for m in counts
            ),
            f"rounds per table count ({rounds_note}); round 0 is the job's first run (every "
            "table, checkpoint and state file created), the others steady: one micro-batch "
            "per stream per round",
            f"seconds and Spark jobs per round: {per_round}",
            "streams that failed because their query's Python process did not connect back "
            "within Spark's 10 s, after fan_out's five attempts, per round: "
            + "; ".join(f"{m.tables} tables: {m.failed}" for m in counts),
            "a driver process measures the counts it is given in turn: its after figures and "
            "Python RSS peaks include what its earlier counts left behind",
            "building the emulator files (not measured): "
            + ", ".join(f"{m.tables}: {m.build_s:.0f} s" for m in counts),
            *(f"{m.tables} tables: {m.remark}" for m in counts if m.remark),
        ],
        table=[
            "Per table count: the first round, then the steady rounds' median; peaks over "
            "every round, and after / what was left once the last round ended:",
            "",
            "| tables | first round s | steady round s | s per table per round | jobs per "
            "round | jobs per table | Python RSS peak MiB | JVM heap peak MiB | Python "
            "threads peak / after | JVM threads peak / after | Python open files peak / after "
            "| JVM open files peak / after | Python workers peak | server connections peak / "
            "after |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
            *(m.row for m in counts),
        ],
    )


if __name__ == "__main__":
    from b1_stream import show

    show(run())
