"""A lever of issue 18 measured before and after, side by side in one process.

`python bench/b1_levers.py LEVER [steady|catch-up] [rounds]` streams the B1 emulator file
through to_delta with the lever off and on, alternating (off first in even rounds, on first in
odd ones), each into new tables, and prints per side: critical-path and total Spark jobs per
batch, the median time per trigger (batches after the first), and seconds per run. The figures
go into the lever's decision record; `run.py` does not run this module.

A lever is switched off by restoring what the code did before it, through module attributes
(the switch lives here, not in the package).
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import b1_jobs  # noqa: E402
import b1_stream  # noqa: E402


@contextmanager
def facts_through_spark() -> Iterator[None]:
    """Before decision 1000: every facts append through Spark, and facts warmed."""
    from mssql_cdc.facts import rows
    from mssql_cdc.sink import writer

    saved = (rows.writes_in_process, writer.writes_in_process)
    rows.writes_in_process = writer.writes_in_process = lambda ref: False  # type: ignore[assignment]
    try:
        yield
    finally:
        rows.writes_in_process, writer.writes_in_process = saved  # type: ignore[assignment]


@contextmanager
def all_off() -> Iterator[None]:
    """Before every lever still in the code: facts through Spark (the batch's cache, decision
    1001, is gone with decision 1350)."""
    with facts_through_spark():
        yield


LEVERS: dict[str, Callable[[], Any]] = {
    "facts_in_process": facts_through_spark,
    "all": all_off,
}


def main(lever: str, shape: str, rounds: int) -> None:
    from mssql_cdc.spark import local_session

    rows = int(os.environ.get("B1_ROWS", b1_stream.ROWS))
    before = LEVERS[lever]
    spark = local_session("mssql-cdc-bench-levers")
    sides: dict[str, list[tuple[float, b1_jobs.RunJobs]]] = {"off": [], "on": []}
    try:
        with tempfile.TemporaryDirectory(prefix="b1l-") as tmp:
            path = Path(tmp) / "e.db"
            b1_stream.build(path, rows)
            options = b1_stream.emulator_options(path)
            if shape == "steady":
                commits = rows // b1_stream.PER_COMMIT // b1_stream.BATCHES
                options["numPartitions"] = "2"
                options["maxCommitsPerBatch"] = str(commits)
            b1_stream.warm_up(spark, Path(tmp))
            for n in range(rounds):
                order = ("off", "on") if n % 2 == 0 else ("on", "off")
                for side in order:
                    work = Path(tmp) / f"{side}{n}"
                    with before() if side == "off" else nullcontext():
                        seconds, _q, counted, _used = b1_stream.measure_ours(
                            spark, options, work, rows
                        )
                    sides[side].append((seconds, counted))
                    print(
                        f"{lever} {shape} round {n} {side}: {seconds:.1f} s, "
                        f"jobs {counted.per_batch()[:2]}",
                        flush=True,
                    )
    finally:
        spark.stop()
    print(f"lever {lever}, {shape}, {rounds} rounds, load average {os.getloadavg()[0]:.1f}")
    for side, runs in sides.items():
        later = [d["triggerExecution"] for _, r in runs for d in r.progress[1:]] or [
            d["triggerExecution"] for _, r in runs for d in r.progress
        ]
        crit = statistics.median(r.per_batch()[0] for _, r in runs)
        total = statistics.median(r.per_batch()[1] for _, r in runs)
        print(
            f"  {side}: critical-path jobs per batch {crit:.1f}, total {total:.1f}; median ms per "
            f"trigger {statistics.median(later):,.0f}; s per run {[round(s, 1) for s, _ in runs]}"
        )
        for line in b1_jobs.where_the_time_goes([r for _, r in runs], skip_first=shape == "steady"):
            print("   ", line)


if __name__ == "__main__":
    main(
        sys.argv[1],
        sys.argv[2] if len(sys.argv) > 2 else "steady",
        int(sys.argv[3]) if len(sys.argv) > 3 else 2,
    )
