"""B7: change rows read over TDS into Arrow by the T-SQL backends, against the in-process read.

The emulator file of B2 (1,000,000 change rows of dbo.orders) is served by `mssql-cdc emulator
serve` in a child process, as a SQL Server would be. Ours: the T-SQL backend's
`read_changes` (the source's own partition read: `change_rows` with the mapping join, fetched
into Arrow batches of 65,536 rows) through mssql-python, and beside it through pymssql.
Baseline: the emulator backend's `read_changes` of the same range and columns in this process.
Rounds alternate the three; the figure is the median.

Memory: the server's peak RSS (the child's VmHWM, reset before the read) and the client's peak
RSS growth while it streams every batch and drops it: both must be bounded by the batch, not
the table. B1 is repeated with the mssql-python backend on 100,000 rows (`b1_stream`'s own
stream, against its emulator-backend run of the same file).
"""

from __future__ import annotations

import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import b1_stream  # noqa: E402
import b2_emulator_read  # noqa: E402
from mssql_cdc.options.config import SourceConfig  # noqa: E402
from mssql_cdc.sqlserver.backend_choice import open_backend  # noqa: E402
from mssql_cdc.sqlserver.metadata import ReadColumn  # noqa: E402
from report import Figure  # noqa: E402

ROWS = 1_000_000
ROUNDS = 3
BATCH_ROWS = 65_536
COLUMNS = (
    ReadColumn("order_id", "INT", "int"),
    ReadColumn("customer_id", "INT", "int"),
    ReadColumn("status", "STRING", "nvarchar"),
    ReadColumn("amount", "DECIMAL(18,2)", "decimal"),
    ReadColumn("updated_at", "TIMESTAMP_NTZ", "datetime2"),
)
_CONNECTION = re.compile(r"^\s+(mssql-python|pymssql):\s+(\S.*)$")


class Served:
    """`mssql-cdc emulator serve PATH` in a child process, and its connection strings."""

    def __init__(self, path: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mssql_cdc.cli", "emulator", "serve", str(path)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        self.connection: dict[str, str] = {}
        while len(self.connection) < 2:
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError("B7: the emulator server exited before it was ready")
            match = _CONNECTION.match(line)
            if match:
                self.connection[match.group(1)] = match.group(2).strip()

    def reset_peak(self) -> None:
        b1_stream._reset_peak_rss(self.process.pid)

    def peak_mib(self) -> float:
        return b1_stream._status_kib(self.process.pid, "VmHWM") / 1024

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(30)


def options(served: Served | None, backend: str, path: Path) -> dict[str, str]:
    if served is None:
        return {"captureInstance": "dbo_orders", "backend": "emulator", "emulatorPath": str(path)}
    return {
        "captureInstance": "dbo_orders",
        "backend": backend,
        "connectionString": served.connection[backend],
    }


def read_all(opts: dict[str, str], lo: str, hi: str, *, sample: bool = False) -> tuple[int, float]:
    """Rows read and this process's peak RSS growth (MiB) while reading them batch by batch."""
    backend = open_backend(SourceConfig.from_options(opts))
    try:
        base = b2_emulator_read._rss_kib("VmRSS")
        peak = base
        rows = 0
        for batch in backend.changes.read_changes(
            "dbo_orders",
            lo,
            hi,
            columns=COLUMNS,
            include_command_id=True,
            time_zone="UTC",
            batch_rows=BATCH_ROWS,
        ):
            rows += batch.num_rows
            if sample:
                peak = max(peak, b2_emulator_read._rss_kib("VmRSS"))
            del batch
        return rows, (peak - base) / 1024
    finally:
        backend.close()


def timed(opts: dict[str, str], lo: str, hi: str, rows: int) -> float:
    started = time.perf_counter()
    got, _ = read_all(opts, lo, hi)
    if got != rows:
        raise RuntimeError(f"B7: {opts['backend']} read {got} rows, not {rows}")
    return rows / (time.perf_counter() - started)


def b1_over_tds(work: Path) -> tuple[float, float]:
    """Seconds of B1's stream on 100,000 rows: (emulator backend, mssql-python backend)."""
    from mssql_cdc.spark import local_session

    spark = local_session("mssql-cdc-bench-b7")
    try:
        path = work / "b1.db"
        b1_stream.build(path, 100 * b1_stream.PER_COMMIT)
        served = Served(path)
        try:
            extra = {"numPartitions": "2", "maxCommitsPerBatch": "10"}
            sides = (("emulator", None), ("mssql-python", served))
            for name, served_or_none in sides:  # warm-up: the JVM's first streams are slow
                opts = {**options(served_or_none, name, path), **extra}
                b1_stream.run_ours(spark, opts, work / f"b1-warm-{name}", 100_000)
            seconds = []
            for name, served_or_none in sides:
                opts = {**options(served_or_none, name, path), **extra}
                seconds.append(b1_stream.run_ours(spark, opts, work / f"b1-{name}", 100_000)[0])
            return seconds[0], seconds[1]
        finally:
            served.stop()
    finally:
        spark.stop()


def filled(path: Path, rows: int) -> tuple[str, str]:
    """An emulator file at `path` holding `rows` change rows; their LSN range."""
    emu = b2_emulator_read.demo(path)
    b2_emulator_read.load(emu, rows)
    lo, hi = emu.min_lsn("dbo_orders"), emu.max_lsn()
    emu.close()
    assert lo is not None
    assert hi is not None
    return lo, hi


class AnonPeak:
    """The highest anonymous RSS (heap, not the mapped database file) of a process, sampled
    every 20 ms on a thread while the block runs."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak_kib = pid, 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._done.is_set():
            self.peak_kib = max(self.peak_kib, b1_stream._status_kib(self.pid, "RssAnon"))
            self._done.wait(0.02)

    def __enter__(self) -> AnonPeak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()


def peaks(path: Path, rows: int) -> dict[str, tuple[float, float, float]]:
    """Per driver, reading `rows`: the server's peak RSS, its peak anonymous RSS and the
    client's RSS growth (MiB). The server maps the database file (SQLite mmap), so its RSS
    counts the file's pages it touched; the anonymous part is what it allocated."""
    lo, hi = filled(path, rows)
    served = Served(path)
    try:
        found = {}
        for name in ("mssql-python", "pymssql"):
            served.reset_peak()
            with AnonPeak(served.process.pid) as anon:
                _, growth = read_all(options(served, name, path), lo, hi, sample=True)
            found[name] = (served.peak_mib(), anon.peak_kib / 1024, growth)
        return found
    finally:
        served.stop()


def run(rows: int = ROWS, rounds: int = ROUNDS) -> Figure:
    with tempfile.TemporaryDirectory(prefix="b7-") as tmp:
        work = Path(tmp)
        path = work / "b7.db"
        lo, hi = filled(path, rows)
        served = Served(path)
        try:
            local = options(None, "emulator", path)
            remote = {name: options(served, name, path) for name in ("mssql-python", "pymssql")}
            for opts in (local, *remote.values()):
                timed(opts, lo, hi, rows)  # warm-up: page cache, driver imports
            rates: dict[str, list[float]] = {"emulator": [], "mssql-python": [], "pymssql": []}
            for _ in range(rounds):
                rates["emulator"].append(timed(local, lo, hi, rows))
                for name, opts in remote.items():
                    rates[name].append(timed(opts, lo, hi, rows))
        finally:
            served.stop()
        memory = {size: peaks(work / f"b7-{size}.db", size) for size in (rows // 4, rows)}
        b1_local, b1_remote = b1_over_tds(work)
    median = {name: statistics.median(values) for name, values in rates.items()}
    return Figure(
        key="B7",
        title=f"change rows read over TDS into Arrow by mssql-python, {rows:,} rows",
        unit="rows/s",
        ours=median["mssql-python"],
        baseline=median["emulator"],
        baseline_name="the emulator backend in process",
        target="none set (issue 15 asks for the ratios)",
        notes=[
            f"median of {rounds} alternating rounds after one warm-up each; the server is "
            "`mssql-cdc emulator serve` in a child process on 127.0.0.1",
            f"pymssql: {median['pymssql']:,.0f} rows/s, ratio "
            f"{median['pymssql'] / median['emulator']:.2f} against the in-process read",
            *(
                f"streaming {size:,} rows in {BATCH_ROWS:,}-row batches (a fresh server each "
                "size): "
                + "; ".join(
                    f"{name}: server peak RSS {server:,.0f} MiB of which anonymous "
                    f"{anon:,.0f} MiB (the rest is the mapped database file), client RSS "
                    f"growth {client:,.1f} MiB"
                    for name, (server, anon, client) in found.items()
                )
                for size, found in memory.items()
            ),
            f"B1's stream on 100,000 rows after one warm-up stream each: {b1_local:,.1f} s with "
            f"the emulator backend, {b1_remote:,.1f} s with mssql-python over TDS (rows/s over "
            f"TDS {b1_local / b1_remote:.2f} of in process)",
        ],
    )


def main(argv: list[str]) -> Any:  # a quick run by hand: python bench/b7_tds_read.py 10000
    rows = int(argv[0]) if argv else ROWS
    print(run(rows=rows, rounds=1).summary())


if __name__ == "__main__":
    main(sys.argv[1:])
