"""Computing the Delta state of the sink's tables ahead of their next keyed append.

Delta answers "which txnVersion did this app id commit?" only from a snapshot's full state,
which it reconstructs with Spark jobs over the table's log, and every commit makes a new
snapshot. So each keyed append (bronze, then facts) would pay that reconstruction on the
batch's critical path, several times the cost of appending the rows. The sink asks for the
state on a background thread as soon as a table changed, so the jobs run while the stream
plans and reads the next batch; the next append finds the snapshot's state computed (or
waits for the running computation instead of starting its own). Decision 0370.

A warm only fills Delta's cache: it writes nothing, and when it fails (a stopped session,
Spark Connect, a table another writer just replaced) the append computes the state itself.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from mssql_cdc.tables.delta_log import delta_log_of, newest_snapshot
from mssql_cdc.tables.refs import TableRef

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
        if getattr(self._spark, "_jvm", None) is None:
            return  # Spark Connect: Delta's log is out of reach; the append does the work
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
                transactions_of(self._spark, ref)
            except Exception as exc:  # noqa: BLE001 - a cache fill; the append computes it itself
                log.debug("%s: computing the Delta state ahead failed: %s", ref, exc)
                with self._lock:
                    self._failed.add(ref.name)  # e.g. no such log API: do not retry per batch
                    self._again.discard(ref.name)
            with self._lock:
                if ref.name not in self._again:
                    self._running.discard(ref.name)
                    return
                self._again.discard(ref.name)


def transactions_of(spark: SparkSession, ref: TableRef) -> int:
    """How many app ids the newest snapshot of `ref` holds transaction records for, computing
    the snapshot's state as a keyed append would."""
    return int(newest_snapshot(spark, delta_log_of(spark, ref)).transactions().size())
