"""`track`: advance the verdicts of running streams as their batches commit.

A StreamingQueryListener only wakes a thread of the tracker; the thread reads the newest
micro-batch (or completed snapshot) row of each tracked target from the facts table and calls
`advance` with its end offset. A facts row is written after its bronze commit, so the offset
is one of data already committed, as `advance` requires; a progress event's own `endOffset`
would not say which target it belongs to, nor survive a restart in a new generation.
Decision 1021. A failed pass is kept as a `TrackerFailure` (the newest ten, and a count of all),
and the tracker can be joined like a thread (docs/tables.md, 'Finalization').
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from mssql_cdc.core import EndsWithBlock
from mssql_cdc.errors import ConfigError
from mssql_cdc.finalization.verdicts import Granularity, advance, truncate
from mssql_cdc.tables import TableOutOfReach, TableRef, open_for_read, read_rows, table_ref

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["KEPT_FAILURES", "Tracker", "TrackerFailure", "newest_ends", "track"]

log = logging.getLogger(__name__)

End = tuple[str, datetime]  # a batch's end LSN (canonical text, so text order is LSN order), time

KEPT_FAILURES = 10
"""How many of its newest failed passes a tracker keeps in `Tracker.failures`."""


@dataclass(frozen=True, slots=True)
class TrackerFailure:
    """One failed pass of a tracker's thread.

    Attributes:
        error: what the pass raised (reading the facts table, or `advance`).
        at: when it failed, naive UTC.
        number: its place among the tracker's failed passes, from 1.
    """

    error: Exception
    at: datetime
    number: int


def track(
    spark: SparkSession,
    target: str | Iterable[str],
    facts_table: str,
    *,
    control_table: str,
    granularity: Granularity = "hour",
) -> Tracker:
    """Advance the verdict of `target` in `control_table` each time one of its batches commits.

    Works for one stream, for several (a fan-out job: `job.targets.values()`), and across the
    stream's restarts and generations, since it follows the facts rows rather than a query.
    Each verdict is the control row named by the target as `to_delta` was given it, the row
    `apply_changes` reads as bronze's verdict.

    Args:
        target: a bronze table, or several.
        facts_table: the facts table the streams write.
        control_table: the control table of the verdicts.
        granularity: "minute", "hour" or "day", as `advance` takes it.
    Returns:
        The running tracker; `stop()` it (or use it as a context manager) when the streams end.
    Raises:
        ConfigError: a bad target, table or granularity, before anything is read.
    """
    from mssql_cdc.tables import check_session

    session = check_session(spark)
    names = [target] if isinstance(target, str) else list(target)
    if not names:
        raise ConfigError("target: pass a bronze table, or several")
    targets = tuple(dict.fromkeys(table_ref(t, argument="target").text for t in names))
    facts = table_ref(facts_table, argument="facts_table")
    table_ref(control_table, argument="control_table")
    truncate(datetime(2000, 1, 1), granularity)  # validates it before anything runs
    tracker = Tracker(session, targets, facts, control_table, granularity)
    tracker._start()
    return tracker


class Tracker(EndsWithBlock):
    """A running `track`: its listener and the thread that advances the verdicts.

    Attributes:
        targets: the bronze tables it tracks, as given to `track`.
        error: the error of its last pass, None after a good pass; a failed pass is retried
            at the next batch, and `stop()` raises the last one's error.
        failures: the newest failed passes of its thread (at most `KEPT_FAILURES`), oldest
            first; `failure_count` counts them all and `last_failure` is the newest.
        verdicts: each target's verdict (naive UTC) as stored after this tracker last advanced
            it; a target it has not advanced yet is missing, and None means no verdict yet.
    """

    def __init__(
        self,
        spark: SparkSession,
        targets: tuple[str, ...],
        facts: TableRef,
        control_table: str,
        granularity: Granularity,
    ) -> None:
        self._spark = spark
        self.targets = targets
        self._facts = facts
        self._control = control_table
        self._granularity = granularity
        self._wake = threading.Event()
        self._pass_lock = threading.Lock()  # the thread's passes and stop()'s last one alternate
        self._stopping = False
        self._passed: dict[str, str] = {}  # the newest end LSN handed to advance, per target
        self._verdicts: dict[str, datetime | None] = {}
        self.error: Exception | None = None  # the last pass's error; None after a good pass
        self._failures: deque[TrackerFailure] = deque(maxlen=KEPT_FAILURES)
        self._failure_count = 0
        self._listener = _listener(self._wake.set)
        self._thread = threading.Thread(target=self._loop, name="mssql-cdc track", daemon=True)

    def _end(self) -> None:  # the end of a `with` block
        self.stop()

    @property
    def verdicts(self) -> dict[str, datetime | None]:
        """Each target's verdict as stored after this tracker last advanced it (naive UTC);
        a target it has not advanced yet is missing."""
        with self._pass_lock:
            return dict(self._verdicts)

    @property
    def failures(self) -> tuple[TrackerFailure, ...]:
        """The newest failed passes of the thread (at most `KEPT_FAILURES`), oldest first;
        a later good pass does not clear them."""
        with self._pass_lock:
            return tuple(self._failures)

    @property
    def failure_count(self) -> int:
        """How many passes of the thread have failed since the tracker started."""
        with self._pass_lock:
            return self._failure_count

    @property
    def last_failure(self) -> TrackerFailure | None:
        """The newest failed pass of the thread, None while none has failed."""
        with self._pass_lock:
            return self._failures[-1] if self._failures else None

    def is_alive(self) -> bool:
        """Whether the tracker's thread still runs (it ends once `stop()` is called)."""
        return self._thread.is_alive()

    def join(self, timeout: float | None = None) -> None:
        """Wait until the tracker's thread ends, as `threading.Thread.join` does: it ends
        once `stop()` is called (from another thread, or a `with` block's end).

        Args:
            timeout: at most this many seconds; None waits as long as it takes. Check
                `is_alive()` afterwards to tell whether it ended.
        Raises:
            ConfigError: a timeout that is not a number of seconds of 0 or more.
        """
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout < 0
        ):
            raise ConfigError(
                f"Tracker.join: timeout must be a number of seconds, 0 or more, or None "
                f"(got {timeout!r})"
            )
        self._thread.join(timeout)

    def advance_now(self) -> dict[str, datetime | None]:
        """Advance every target to its newest committed batch now, and return `verdicts`.

        Raises:
            Exception: what reading the facts table or `advance` raised.
        """
        with self._pass_lock:
            self._advance_all()
            return dict(self._verdicts)

    def stop(self) -> dict[str, datetime | None]:
        """Stop listening, then advance once more to the batches committed so far.

        Returns:
            `verdicts` after that last pass.
        Raises:
            Exception: what the last pass raised.
        """
        if not self._stopping:
            self._stopping = True
            self._spark.streams.removeListener(self._listener)
            self._wake.set()
            self._thread.join()
        return self.advance_now()

    def _start(self) -> None:
        self._thread.start()
        self._spark.streams.addListener(self._listener)

    def _loop(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            if self._stopping:
                return
            with self._pass_lock:
                try:
                    self._advance_all()
                    self.error = None
                except Exception as exc:  # noqa: BLE001 - kept in `error`, retried at the next batch, raised by stop()
                    self.error = exc
                    self._failure_count += 1
                    at = datetime.now(UTC).replace(tzinfo=None)
                    self._failures.append(TrackerFailure(exc, at, self._failure_count))
                    log.warning("finalization.track: the verdicts did not advance: %s", exc)

    def _advance_all(self) -> None:
        ends = newest_ends(self._spark, self._facts, self.targets)
        for target, (end_lsn, commit_ts) in ends.items():
            if self._passed.get(target, "") >= end_lsn:
                continue
            offset: Mapping[str, Any] = {"lsn": end_lsn, "commit_ts": commit_ts}
            self._verdicts[target] = advance(
                self._spark, self._control, target, offset, granularity=self._granularity
            )
            self._passed[target] = end_lsn


# A completed snapshot's row ends at its LSN with that LSN's commit time, and is written after
# its rows: bronze then holds everything committed up to it, as after a batch. Counting it
# gives a stream whose only batch read nothing (its row has no end commit time) a verdict.
COMPLETIONS = ("bootstrap", "resnapshot")


def newest_ends(spark: SparkSession, facts: TableRef, targets: tuple[str, ...]) -> dict[str, End]:
    """The end offset of each target's newest micro-batch or completed snapshot row; a target
    without one is missing (so is every target while the facts table does not exist)."""
    if open_for_read(spark, facts, "facts") is None:
        return {}
    try:
        import pyarrow.compute as pc

        where = (
            pc.field("target").isin(list(targets))
            & (pc.field("event").is_null() | pc.field("event").isin(list(COMPLETIONS)))
            & pc.field("end_lsn").is_valid()
            & pc.field("end_commit_ts").is_valid()
        )
        rows = read_rows(facts, columns=("target", "end_lsn", "end_commit_ts"), where=where)
        found: dict[str, End] = {}
        for r in rows.to_pylist():
            end = (str(r["end_lsn"]), r["end_commit_ts"])
            if end[0] > found.get(r["target"], ("", end[1]))[0]:
                found[r["target"]] = end
        return found
    except TableOutOfReach:
        pass  # a catalog name, or a path only Spark reads
    from pyspark.sql import functions as F

    rows_by_spark = (
        spark.table(facts.sql)
        .where(
            F.col("target").isin(list(targets))
            & (F.col("event").isNull() | F.col("event").isin(list(COMPLETIONS)))
            & F.col("end_lsn").isNotNull()
            & F.col("end_commit_ts").isNotNull()
        )
        .groupBy("target")
        .agg(F.max_by(F.struct("end_lsn", "end_commit_ts"), "end_lsn").alias("end"))
        .collect()
    )
    return {r["target"]: (r["end"]["end_lsn"], r["end"]["end_commit_ts"]) for r in rows_by_spark}


def _listener(wake: Callable[[], None]) -> Any:
    """A StreamingQueryListener calling `wake` when any query reports a batch or ends; pyspark
    is imported here, not when the package is."""
    from pyspark.sql.streaming.listener import StreamingQueryListener

    class _Wake(StreamingQueryListener):
        def onQueryStarted(self, event: Any) -> None:
            pass

        def onQueryProgress(self, event: Any) -> None:
            wake()

        def onQueryIdle(self, event: Any) -> None:
            pass

        def onQueryTerminated(self, event: Any) -> None:
            wake()

    return _Wake()
