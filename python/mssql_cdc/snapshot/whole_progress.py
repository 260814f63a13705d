"""Progress of a whole snapshot while its one Spark append runs (decision 0924).

The append gives the driver nothing until it ends, so the read's tasks leave
`progress-<partition>.json` files (rows read so far) in a private temporary folder, and a
thread on the driver sums them into `advanced` progress records with a rate (from the first
rows seen) and, when the source's row count is known, an ETA. The folder is only offered
where the executors write to the driver's disk (a `local` master, or `local-cluster`);
elsewhere the snapshot reports its start and its end only.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

from mssql_cdc.core import Progress, per_second, report

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["read_progress", "watch_whole_read"]

# Seconds between two progress records: often enough for a bar, rare enough for a log.
REPORT_SECONDS = 5.0


def _shares_driver_disk(spark: SparkSession) -> bool:
    master = spark.conf.get("spark.master", None) or ""
    return master.startswith("local")


def read_progress(folder: str) -> int:
    """Rows the tasks of a whole read have reported in `folder` so far (0 for none)."""
    total = 0
    try:
        names = os.listdir(folder)
    except OSError:
        return 0
    for name in names:
        if not (name.startswith("progress-") and name.endswith(".json")):
            continue
        try:
            with open(os.path.join(folder, name), encoding="utf-8") as handle:
                rows = json.load(handle).get("rows")
        except (OSError, ValueError, AttributeError):
            continue  # replaced while read, or not ours: the next poll reads it again
        if isinstance(rows, int) and rows > 0:
            total += rows
    return total


class _Watcher:
    def __init__(self, log: logging.Logger, target: str, folder: str, expected: int | None):
        self._log, self._target, self._folder, self._expected = log, target, folder, expected
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"mssql-cdc snapshot progress {target}", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        # The rate counts from the first rows seen: the table's creation and the tasks' start
        # before them would make every early ETA far too long.
        first: tuple[float, int] | None = None
        last = 0
        while not self._stop.wait(REPORT_SECONDS):
            done = read_progress(self._folder)
            if done <= last:
                continue
            last = done
            now = time.monotonic()
            if first is None:
                first = (now, done)
                self._report(done, None)
            else:
                seconds, rows = now - first[0], done - first[1]
                self._report(done, rows / seconds if seconds > 0 else None)

    def _report(self, done: int, rate: float | None) -> None:
        expected = self._expected
        total = expected if expected is not None and expected >= done else None
        eta = None if not rate or total is None else (total - done) / rate
        report(
            self._log,
            Progress("snapshot", self._target, "advanced", done, total, "rows", rate, eta),
            "%s: snapshot read %s%s rows%s%s",
            self._target,
            f"{done:,}",
            "" if total is None else f" of about {total:,}",
            "" if rate is None else f", {per_second(rate, 'rows')}",
            "" if eta is None else f", about {eta:.0f} s left",
        )


@contextlib.contextmanager
def watch_whole_read(
    spark: SparkSession, log: logging.Logger, target: str, *, expected: int | None
) -> Iterator[str | None]:
    """A folder for a whole read's progress files (None where the driver cannot see them),
    watched while the block runs and removed after it.

    Records go to `log` only when it is enabled for INFO; otherwise no folder is made.
    """
    if not log.isEnabledFor(logging.INFO) or not _shares_driver_disk(spark):
        yield None
        return
    folder = tempfile.mkdtemp(prefix="mssql-cdc-snapshot-")
    watcher = _Watcher(log, target, folder, expected)
    watcher.start()
    try:
        yield folder
    finally:
        watcher.stop()
        shutil.rmtree(folder, ignore_errors=True)
