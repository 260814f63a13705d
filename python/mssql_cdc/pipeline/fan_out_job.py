"""`fan_out(spark, streams, ...) -> FanOutJob`: one `to_delta` per capture instance, one job.

The whole description is checked first (`fan_out_plan.py`); then each stream's `to_delta`
runs in a thread of its own, so one stream's pre-flight (a recovery, a bootstrap snapshot)
does not hold up the others, and at most `max_snapshots` full snapshots are read at once
(`snapshot/slots.py`). Each stream keeps its own checkpoint, app_id and generation, and
recovers on its own; the streams share one facts table. Decision 1020. A stream that failed
because its connection to the source failed past its retries says so, and to run the job
again (decision 1406); one that failed on another error of the SQL Server driver says the
error is the driver's, and what to check. A query still in Spark's first status counts as
starting (decision 1434). Once a stream's query has ended, the Py4J connection its sink was
called on is closed, so a job run again and again in one driver leaves no thread or socket
per stream behind (decision 1450).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, get_args

from mssql_cdc.core import is_store_uri, spark_only, write_fault_advice
from mssql_cdc.errors import ConfigError, StreamFailedError
from mssql_cdc.options import OnDataLoss, SnapshotMode
from mssql_cdc.pipeline.callback_connections import release_ended
from mssql_cdc.pipeline.cdc_stream import CdcStream
from mssql_cdc.pipeline.fan_out_plan import (
    JobSettings,
    PlannedStream,
    check_limit,
    plan_streams,
)
from mssql_cdc.snapshot import limited
from mssql_cdc.sqlserver import is_transient
from mssql_cdc.tables import check_session, ensure_table, table_ref

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

__all__ = ["FanOutJob", "OnFailure", "StreamState", "fan_out"]

OnFailure = Literal["stop", "continue"]

START_ATTEMPTS = 5
"""How often a stream is started when its query's Python process fails to connect back."""
START_WAIT = 60.0
"""The longest a starting stream holds its start slot waiting for its query's sources."""
StreamState = Literal["starting", "running", "finished", "failed", "stopped"]

log = logging.getLogger(__name__)

# The statuses of a query whose sources (and their Python processes) are not up yet: Spark's
# first, set before `start()` returns, then the one while its sources are made.
_INITIALIZING = ("Initializing StreamExecution", "Initializing sources")
# What Spark and PySpark say when a Python process did not connect back in time.
_WORKER_DID_NOT_START = ("Python worker failed to connect back", "[CANNOT_OPEN_SOCKET]")


# What a stream whose connection failed past its retries says to do.
_CONNECTION_ADVICE = (
    "; the connection to the source failed after its retries (a transient error: a server "
    "restarting, a network cut): check that the server answers, then run the job again: each "
    "stream resumes where it stopped"
)


# The SQL Server drivers' packages. An error of theirs the retries did not count as transient
# (pymssql's bare "(0, b'Unknown error')" after a server restart, say) still comes from the
# server or the connection, not from this library, and the job may say so.
_DRIVER_PACKAGES = frozenset({"pymssql", "_mssql", "mssql_python", "pytds"})
_DRIVER_ADVICE = (
    "; this error came from the SQL Server driver, not from mssql-cdc: if the server restarted "
    "or the connection dropped, check that the server answers, then run the job again: each "
    "stream resumes where it stopped; otherwise the driver's text says what the server refused"
)


def _from_driver(exc: BaseException) -> bool:
    """Whether `exc`, or an error it was raised from, is a SQL Server driver's own."""
    seen: BaseException | None = exc
    for _ in range(10):  # a cause chain is short; the bound guards a cycle
        if seen is None:
            return False
        if type(seen).__module__.split(".")[0] in _DRIVER_PACKAGES:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _did_not_start(failure: BaseException | None) -> bool:
    return failure is not None and any(sign in str(failure) for sign in _WORKER_DID_NOT_START)


def fan_out(
    spark: SparkSession,
    streams: object,
    *,
    options: Mapping[str, object],
    facts_table: str,
    root: str | None = None,
    trigger: Mapping[str, Any] | None = None,
    bootstrap: bool = False,
    on_data_loss: OnDataLoss = "fail",
    snapshot: SnapshotMode = "full",
    resnapshot_interval_days: float = 7.0,
    gap_deletes: bool = False,
    max_snapshots: int = 2,
    max_starting: int = 4,
    on_failure: OnFailure = "stop",
) -> FanOutJob:
    """Start one `to_delta` per entry of `streams` and return the running job (docs/fan-out.md).

    Args:
        streams: the streams, each a mapping or a `StreamEntry` with `capture_instance` and
            optionally `target`, `app_id`, `checkpoint`, `options` (over the job's options),
            `bootstrap`, `on_data_loss`, `snapshot`, `resnapshot_interval_days`,
            `gap_deletes`.
        options: the source options every stream shares (backend, connection, ...), without
            captureInstance.
        facts_table: the one facts table the streams write their facts and event rows to.
        root: when given, a stream without a target, checkpoint or app_id gets
            `<root>/bronze/<capture instance>`, `<root>/checkpoints/<capture instance>` and the
            capture instance's name; only names of letters, digits, `_`, `-` and `.` (not
            first) are used so, and two names differing only in case are refused.
        trigger: as `to_delta` takes it, for every stream.
        bootstrap: as `to_delta` takes it, for each stream whose entry gives none.
        on_data_loss: as `to_delta` takes it; an entry may give its own.
        snapshot: as `to_delta` takes it; an entry may give its own.
        resnapshot_interval_days: as `to_delta` takes it; an entry may give its own.
        gap_deletes: as `to_delta` takes it; an entry may give its own.
        max_snapshots: how many full snapshots (bootstraps and re-snapshots) may be read at
            once, 1 to 64.
        max_starting: how many streams may be starting at once, 1 to 64: from a stream's
            pre-flight until its query's sources are up (each query of a Python data source
            starts a Python process of its own).
        on_failure: "stop" stops the other streams at the first failure; "continue" lets them
            run on (`await_termination` raises the first failure once all have ended).
    Returns:
        The job, at once: the streams start in the background.
    Raises:
        ConfigError (a ValueError): any invalid argument or entry, named (`streams[3]
            (dbo_items): ...`), before anything is read, written or started.
    """
    session = check_session(spark)
    planned = plan_streams(
        streams,
        JobSettings(
            options=options,
            facts_table=facts_table,
            root=root,
            trigger=trigger,
            bootstrap=bootstrap,
            on_data_loss=on_data_loss,
            snapshot=snapshot,
            resnapshot_interval_days=resnapshot_interval_days,
            gap_deletes=gap_deletes,
        ),
    )
    slots = check_limit("max_snapshots", max_snapshots, "full snapshots may be read at once")
    starting = check_limit("max_starting", max_starting, "streams may be starting at once")
    if on_failure not in get_args(OnFailure):
        raise ConfigError(f"on_failure={on_failure!r}: pass 'stop' or 'continue'")
    # Created once here, so the streams' first facts writes do not race to create it.
    ensure_table(session, table_ref(facts_table, argument="facts_table"), "facts")
    job = FanOutJob(
        session, planned, max_snapshots=slots, max_starting=starting, on_failure=on_failure
    )
    job._start()
    return job


class FanOutJob:
    """The running streams of one `fan_out` call, keyed by app_id.

    What it holds is read through its properties and methods, each a copy taken under its lock:

    Attributes:
        targets: each stream's bronze table by app_id (what `finalization.track` takes).
        queries: the streaming queries started so far by app_id; a stream still in its
            pre-flight, or one that failed before starting, is missing.
        failures: the streams' failures so far, first first, each a `StreamFailedError`
            naming its stream, the stream's own error as its cause.

    `states()` gives each stream's state: starting, running, finished, failed or stopped.
    """

    def __init__(
        self,
        spark: SparkSession,
        planned: tuple[PlannedStream, ...],
        *,
        max_snapshots: int,
        max_starting: int,
        on_failure: OnFailure,
    ) -> None:
        self._spark = spark
        self._planned = {p.args.app_id: p for p in planned}
        self._slots = threading.BoundedSemaphore(max_snapshots)
        self._starting = threading.BoundedSemaphore(max_starting)
        self._on_failure = on_failure
        self._changed = threading.Condition()
        self._states: dict[str, StreamState] = {app_id: "starting" for app_id in self._planned}
        self._queries: dict[str, StreamingQuery] = {}
        self._failures: list[StreamFailedError] = []
        self._stopping = False
        self._threads: list[threading.Thread] = []

    def __repr__(self) -> str:
        return f"FanOutJob({len(self._planned)} streams, {self.states()})"

    @property
    def targets(self) -> dict[str, str]:
        """The bronze table of each stream, by app_id (what `finalization.track` takes)."""
        return {app_id: p.args.target for app_id, p in self._planned.items()}

    @property
    def queries(self) -> dict[str, StreamingQuery]:
        """The queries started so far, by app_id."""
        with self._changed:
            return dict(self._queries)

    @property
    def failures(self) -> list[StreamFailedError]:
        """The streams' failures so far, first first; each names its stream."""
        with self._changed:
            return list(self._failures)

    def states(self) -> dict[str, StreamState]:
        """Each stream's state by app_id: starting (its pre-flight), running, finished,
        failed or stopped."""
        with self._changed:
            return dict(self._states)

    def await_termination(self, timeout: float | None = None) -> bool:
        """Wait until every stream has ended (an availableNow or once trigger ends by itself).

        Returns:
            True when every stream has ended, False when `timeout` seconds passed first.
        Raises:
            StreamFailedError: the job's first failure, naming its stream, with the stream's
                own error as its cause (`is_data_loss` follows it). With on_failure="stop" it
                is raised once the other streams are stopped; with "continue" once all ended.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._changed:
            while not self._settled():
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._changed.wait(left)
            first = self._failures[0] if self._failures else None
        if first is not None:
            if self._on_failure == "stop":
                self.stop()
            raise first
        return True

    def stop(self) -> None:
        """Stop every stream and return once none runs; a stream still in its pre-flight
        finishes that first (a snapshot is not cut short), then stops."""
        with self._changed:
            self._stopping = True
            running = list(self._queries.items())
        for _, query in running:
            query.stop()
        for thread in self._threads:
            thread.join()

    def _settled(self) -> bool:
        if self._failures and self._on_failure == "stop":
            return True
        return all(s in ("finished", "failed", "stopped") for s in self._states.values())

    def _start(self) -> None:
        for planned in self._planned.values():
            thread = threading.Thread(
                target=self._run, args=(planned,), name=f"fan-out {planned.args.app_id}"
            )
            thread.daemon = True  # an interpreter that exits does not wait for Spark
            self._threads.append(thread)
            thread.start()

    def _run(self, planned: PlannedStream) -> None:
        app_id = planned.args.app_id
        try:
            with self._starting:
                query = self._start_one(planned)
            if query is None:
                self._set(app_id, "stopped")
                return
            try:
                query.awaitTermination()
            finally:
                release_ended(query)  # its sink is called no more
        except Exception as exc:  # noqa: BLE001 - recorded as the stream's failure, re-raised by await
            self._fail(planned, exc)
            return
        self._set(app_id, "stopped" if self._stopping else "finished")

    def _start_one(self, planned: PlannedStream) -> StreamingQuery | None:
        """The stream's query once started (its sources up), None when the job stops
        first. A query whose Python process did not connect back in Spark's fixed 10 seconds
        (a busy driver) did nothing yet, so it is started again, up to START_ATTEMPTS times."""
        app_id = planned.args.app_id
        for attempt in range(1, START_ATTEMPTS + 1):
            if self._stopping:
                return None
            with limited(self._slots):
                try:
                    query = self._to_delta(planned)
                except Exception as exc:
                    # On Spark Connect the foreachBatch process starts inside start(), so its
                    # failure to connect back is raised here; to_delta is safe to run again.
                    if attempt == START_ATTEMPTS or not _did_not_start(exc):
                        raise
                    self._retry_start(planned, attempt)
                    continue
            with self._changed:
                self._queries[app_id] = query
                stop_now = self._stopping
                self._set_locked(app_id, "running")
            if stop_now:
                query.stop()
                return query
            self._wait_until_started(query)
            failure = None if query.isActive else query.exception()
            if failure is None or query.lastProgress is not None or attempt == START_ATTEMPTS:
                return query
            if not _did_not_start(failure):
                return query
            self._retry_start(planned, attempt)
        return None  # not reached: the last attempt returns its query or raises

    def _retry_start(self, planned: PlannedStream, attempt: int) -> None:
        log.warning(
            "%s: its query's Python process did not start in time (attempt %d of %d); "
            "starting it again",
            planned.label,
            attempt,
            START_ATTEMPTS,
        )
        time.sleep(2.0 * attempt)  # a driver too busy to start it needs a moment

    def _wait_until_started(self, query: StreamingQuery) -> None:
        """Return once `query` has its sources initialized (their Python process connected
        back), reported progress, or ended, or START_WAIT passed, so the next stream's Python
        process does not compete with this one's start. A query `start()` just returned may
        not have begun making its sources yet: that status counts as starting too, else a
        Python process that then fails to connect back would fail the stream unretried."""
        deadline = time.monotonic() + START_WAIT
        while time.monotonic() < deadline and not self._stopping:
            if not query.isActive or query.lastProgress is not None:
                return
            if query.status.get("message") not in _INITIALIZING:
                return
            time.sleep(0.2)

    def _to_delta(self, planned: PlannedStream) -> StreamingQuery:
        a = planned.args
        return CdcStream(self._spark, planned.config, planned.options).to_delta(
            a.target,
            a.app_id,
            a.checkpoint,
            a.facts_table,
            trigger=a.trigger,
            bootstrap=a.bootstrap,
            on_data_loss=a.on_data_loss,
            resnapshot_interval_days=a.interval_days,
            snapshot=a.mode,
            gap_deletes=a.gap_deletes,
        )

    def _fail(self, planned: PlannedStream, exc: Exception) -> None:
        text = str(exc)
        cut = text.find("\n=== Streaming Query")  # Spark's query description, not the cause
        advice = write_fault_advice(text, _written_folders(planned))
        error = StreamFailedError(
            f"{planned.label}, app_id {planned.args.app_id!r}, failed: "
            f"{type(exc).__name__}: {text[:cut] if cut > 0 else text}"
            + (f"\n{advice}" if advice else "")
            + (
                _CONNECTION_ADVICE
                if is_transient(exc)
                else _DRIVER_ADVICE
                if _from_driver(exc)
                else ""
            ),
            planned.args.app_id,
            planned.config.capture_instance,
        )
        error.__cause__ = exc
        with self._changed:
            self._failures.append(error)
            self._set_locked(planned.args.app_id, "failed")
            stop_others = self._on_failure == "stop" and not self._stopping
            if stop_others:
                self._stopping = True
            running = [q for a, q in self._queries.items() if a != planned.args.app_id]
        if stop_others:
            for query in running:
                query.stop()

    def _set(self, app_id: str, state: StreamState) -> None:
        with self._changed:
            self._set_locked(app_id, state)

    def _set_locked(self, app_id: str, state: StreamState) -> None:
        self._states[app_id] = state
        self._changed.notify_all()


def _written_folders(planned: PlannedStream) -> list[tuple[str, str]]:
    """The local folders a stream's query writes, each with its role in a message."""
    folders = []
    if not spark_only(planned.args.checkpoint):
        folders.append((planned.args.checkpoint, "the checkpoint"))
    metrics = planned.config.metrics_path
    if metrics and not is_store_uri(metrics):
        folders.append((metrics, "the metrics folder (option metricsPath)"))
    return folders
