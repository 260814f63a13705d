"""Computing the Delta state of the sink's tables ahead of their next keyed append.

Delta answers "which txnVersion did this app id commit?" only from a snapshot's full state,
which it reconstructs with Spark jobs over the table's log, and every commit makes a new
snapshot. So each keyed append (bronze, then facts) would pay that reconstruction on the
batch's critical path, several times the cost of appending the rows. The sink asks for the
state on a background thread as soon as a table changed, so the jobs run while the stream
plans and reads the next batch; the next append finds the snapshot's state computed (or
waits for the running computation instead of starting its own). Decisions 0370 and 0800:
the state is asked for by `DESCRIBE DETAIL`, a public command that computes the newest
snapshot's state (its transactions too) in the session's Delta cache, on Spark Connect too.

A warm only fills Delta's cache: it writes nothing, and when it fails (a stopped session,
a table another writer just replaced) the append computes the state itself.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from mssql_cdc.tables import TableRef

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["StateWarmer"]

log = logging.getLogger("mssql_cdc.sink.writer")


class StateWarmer:
    """Background computations of tables' Delta state, at most one running per table.

    A request made while that table's computation runs is remembered and served once it
    ends, so a commit made in between is computed too and threads never pile up.
    """

    def __init__(self, spark: SparkSession) -> None:
        self._spark = spark
        self._lock = threading.Lock()
        self._running: set[str] = set()
        self._again: set[str] = set()
        self._failed: set[str] = set()
        self._threads: list[threading.Thread] = []

    def warm(self, ref: TableRef) -> None:
        """Start computing the state of `ref`'s newest snapshot, unless it is under way."""
        with self._lock:
            if ref.name in self._failed:
                return
            if ref.name in self._running:
                self._again.add(ref.name)
                return
            self._running.add(ref.name)
        thread = threading.Thread(
            target=self._run, args=(ref,), name=f"mssql_cdc-warm-{ref.name}", daemon=True
        )
        thread.start()
        self._threads = [t for t in self._threads if t.is_alive()] + [thread]

    def idle(self, timeout: float | None = None) -> bool:
        """Wait until no computation runs (tests use it); False if `timeout` passed first."""
        for thread in list(self._threads):
            thread.join(timeout)
        with self._lock:
            return not self._running

    def _run(self, ref: TableRef) -> None:
        while True:
            try:
                compute_state(self._spark, ref)
            except Exception as exc:  # noqa: BLE001 - a cache fill; the append computes it itself
                log.debug("%s: computing the Delta state ahead failed: %s", ref, exc)
                with self._lock:
                    self._failed.add(ref.name)  # e.g. a stopped session: not retried per batch
                    self._again.discard(ref.name)
            with self._lock:
                if ref.name not in self._again:
                    self._running.discard(ref.name)
                    return
                self._again.discard(ref.name)


def compute_state(spark: SparkSession, ref: TableRef) -> None:
    """Have Delta compute the state of `ref`'s newest snapshot, as a keyed append would."""
    spark.sql(f"DESCRIBE DETAIL {ref.sql}").collect()
