"""A fan-out job's policies, on streams whose queries are stand-ins (no JVM): the first
failure names its stream, "stop" stops the others, "continue" lets them end, and no more
snapshots run at once than the job allows."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from mssql_cdc import is_data_loss
from mssql_cdc.errors import ConnectionLostError, DataLossError, StreamFailedError
from mssql_cdc.pipeline.fan_out_job import FanOutJob, OnFailure
from mssql_cdc.pipeline.fan_out_plan import JobSettings, PlannedStream, plan_streams
from mssql_cdc.snapshot.slots import slot


class Query:
    """A StreamingQuery stand-in that runs until stopped, or ends or fails when told."""

    def __init__(self) -> None:
        self.ended = threading.Event()
        self.error: Exception | None = None
        self.stopped = False
        self.lastProgress: dict[str, Any] | None = {"batchId": 0}

    @property
    def isActive(self) -> bool:
        return not self.ended.is_set()

    def awaitTermination(self) -> None:
        self.ended.wait()
        if self.error is not None:
            raise self.error

    def exception(self) -> Exception | None:
        return self.error

    def stop(self) -> None:
        self.stopped = True
        self.ended.set()

    def fail(self, error: Exception) -> None:
        self.error = error
        self.ended.set()


def planned(tmp_path: Path, n: int) -> tuple[PlannedStream, ...]:
    db = tmp_path / "e.db"
    db.write_bytes(b"")
    settings = JobSettings(
        options={"backend": "emulator", "emulatorPath": str(db)},
        facts_table=str(tmp_path / "facts"),
        root=str(tmp_path / "lake"),
    )
    return plan_streams([{"capture_instance": f"dbo_t{i}"} for i in range(n)], settings)


def job_of(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    start: Any,
    *,
    n: int = 3,
    on_failure: OnFailure = "stop",
    max_snapshots: int = 2,
) -> FanOutJob:
    monkeypatch.setattr(FanOutJob, "_to_delta", lambda self, p: start(p.args.app_id))
    job = FanOutJob(
        object(),  # type: ignore[arg-type]
        planned(tmp_path, n),
        max_snapshots=max_snapshots,
        max_starting=n,
        on_failure=on_failure,
    )
    job._start()
    return job


def test_a_failed_start_stops_the_others_and_names_its_stream(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    queries: dict[str, Query] = {}

    def start(app_id: str) -> Query:
        if app_id == "dbo_t1":
            raise DataLossError("dbo_t1: purged", "dbo_t1")
        return queries.setdefault(app_id, Query())

    job = job_of(tmp_path, monkeypatch, start)
    with pytest.raises(StreamFailedError) as failed:
        job.await_termination(30)
    assert (failed.value.app_id, failed.value.capture_instance) == ("dbo_t1", "dbo_t1")
    assert str(failed.value).startswith("streams[1] (dbo_t1), app_id 'dbo_t1', failed:")
    assert is_data_loss(failed.value)
    assert all(q.stopped for q in queries.values())
    assert job.states()["dbo_t1"] == "failed"
    assert set(job.states().values()) <= {"failed", "stopped"}


def test_with_continue_the_others_run_to_their_end_before_the_failure_is_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    queries = {f"dbo_t{i}": Query() for i in range(3)}
    job = job_of(tmp_path, monkeypatch, queries.__getitem__, on_failure="continue")
    queries["dbo_t0"].fail(RuntimeError("the sink broke"))
    assert job.await_termination(0.3) is False  # dbo_t1 and dbo_t2 still run
    assert not queries["dbo_t1"].stopped
    queries["dbo_t1"].ended.set()
    queries["dbo_t2"].ended.set()
    with pytest.raises(StreamFailedError, match="the sink broke") as failed:
        job.await_termination(30)
    assert failed.value.app_id == "dbo_t0"
    assert job.states() == {"dbo_t0": "failed", "dbo_t1": "finished", "dbo_t2": "finished"}


def test_a_job_whose_streams_all_end_returns_true(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def start(app_id: str) -> Query:
        query = Query()
        query.ended.set()  # an availableNow query that caught up
        return query

    job = job_of(tmp_path, monkeypatch, start)
    assert job.await_termination(30) is True
    assert job.failures == []
    assert set(job.states().values()) == {"finished"}


def test_stop_stops_every_running_stream(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    queries: dict[str, Query] = {}
    job = job_of(tmp_path, monkeypatch, lambda a: queries.setdefault(a, Query()))
    while len(job.queries) < 3:
        time.sleep(0.01)
    job.stop()
    assert all(q.stopped for q in queries.values())
    assert set(job.states().values()) == {"stopped"}
    assert job.await_termination(1) is True


def test_no_more_snapshots_run_at_once_than_the_job_allows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    running, peak, lock = [0], [0], threading.Lock()

    def start(app_id: str) -> Query:
        with slot():  # what take_full holds while it reads and writes
            with lock:
                running[0] += 1
                peak[0] = max(peak[0], running[0])
            time.sleep(0.05)
            with lock:
                running[0] -= 1
        query = Query()
        query.ended.set()
        return query

    job = job_of(tmp_path, monkeypatch, start, n=8, max_snapshots=2)
    assert job.await_termination(30) is True
    assert peak[0] == 2


def test_a_query_whose_python_process_did_not_start_is_started_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    starts: list[Query] = []

    def start(app_id: str) -> Query:
        query = Query()
        if not starts:  # the first start fails before its first progress
            query.lastProgress = None
            query.fail(RuntimeError("Python worker failed to connect back."))
        else:
            query.ended.set()
        starts.append(query)
        return query

    job = job_of(tmp_path, monkeypatch, start, n=1)
    assert job.await_termination(30) is True
    assert len(starts) == 2
    assert job.states() == {"dbo_t0": "finished"}
    assert "did not start in time (attempt 1 of 5)" in caplog.text


class StartingQuery(Query):
    """A query `start()` just returned: Spark's first status until its sources are being made,
    then, a moment later, the failure of a Python process that did not connect back."""

    def __init__(self, message: str) -> None:
        super().__init__()
        self.lastProgress = None
        self.status = {"message": message}
        threading.Timer(
            0.5, self.fail, [RuntimeError("Python worker failed to connect back.")]
        ).start()


@pytest.mark.parametrize("message", ["Initializing StreamExecution", "Initializing sources"])
def test_a_query_still_initializing_whose_python_process_then_fails_is_started_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, message: str
) -> None:
    # Spark's status is "Initializing StreamExecution" from start() until the query thread
    # begins making its sources; a Python process failing to connect back after that moment
    # did nothing yet, so the stream is started again rather than failed.
    starts: list[Query] = []

    def start(app_id: str) -> Query:
        query: Query = StartingQuery(message) if not starts else Query()
        if starts:
            query.ended.set()
        starts.append(query)
        return query

    job = job_of(tmp_path, monkeypatch, start, n=1)
    assert job.await_termination(30) is True
    assert len(starts) == 2
    assert job.states() == {"dbo_t0": "finished"}


def test_a_start_that_raises_because_its_python_process_did_not_connect_is_tried_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Spark Connect starts a foreachBatch query's Python process inside start(), so the
    # failure comes from to_delta itself rather than from the started query.
    calls: list[str] = []

    def start(app_id: str) -> Query:
        calls.append(app_id)
        if len(calls) == 1:
            raise RuntimeError("[CANNOT_OPEN_SOCKET] Can not open socket: timed out")
        query = Query()
        query.ended.set()
        return query

    job = job_of(tmp_path, monkeypatch, start, n=1)
    assert job.await_termination(30) is True
    assert calls == ["dbo_t0", "dbo_t0"]
    assert job.states() == {"dbo_t0": "finished"}
    assert "did not start in time (attempt 1 of 5)" in caplog.text


def test_a_query_that_fails_otherwise_is_not_started_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    starts: list[Query] = []

    def start(app_id: str) -> Query:
        query = Query()
        query.lastProgress = None
        query.fail(DataLossError("dbo_t0: purged", "dbo_t0"))
        starts.append(query)
        return query

    job = job_of(tmp_path, monkeypatch, start, n=1)
    with pytest.raises(StreamFailedError, match="purged"):
        job.await_termination(30)
    assert len(starts) == 1


@pytest.mark.parametrize(
    ("spark_text", "fault", "fix"),
    [
        ("No space left on device", "no space left on device", "free space on its file system"),
        ("Read-only file system", "read-only file system", "mount it read-write"),
    ],
)
def test_a_query_that_fails_writing_its_folders_says_which_and_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spark_text: str, fault: str, fix: str
) -> None:
    queries = {f"dbo_t{i}": Query() for i in range(2)}
    job = job_of(tmp_path, monkeypatch, queries.__getitem__, n=2)
    queries["dbo_t1"].fail(
        RuntimeError(
            f"[STREAM_FAILED] Query terminated with exception: java.io.IOException: {spark_text}"
            " SQLSTATE: XXKST\n=== Streaming Query ===\nIdentifier: dbo_t1"
        )
    )
    with pytest.raises(StreamFailedError) as failed:
        job.await_termination(30)
    checkpoint = job._planned["dbo_t1"].args.checkpoint
    first, advice = str(failed.value).split("\n")
    assert first.endswith(f"java.io.IOException: {spark_text} SQLSTATE: XXKST")
    assert advice.startswith(
        f"the query stopped writing its files: {fault} (the checkpoint {checkpoint} ("
    )
    assert advice.endswith(
        f"bytes free)). Committed batches are kept; {fix} and run again: the run resumes after "
        "the last committed batch."
    )


def test_a_failure_that_is_no_write_fault_gets_no_advice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    queries = {"dbo_t0": Query()}
    job = job_of(tmp_path, monkeypatch, queries.__getitem__, n=1)
    queries["dbo_t0"].fail(RuntimeError("the sink broke"))
    with pytest.raises(StreamFailedError) as failed:
        job.await_termination(30)
    assert (
        str(failed.value)
        == "streams[0] (dbo_t0), app_id 'dbo_t0', failed: RuntimeError: the sink broke"
    )


def test_a_stream_whose_connection_failed_past_its_retries_says_to_run_the_job_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A chaos run's driver ended with the driver's own text, which says nothing of what to do.
    def start(app_id: str) -> Query:
        raise ConnectionLostError("the connection broke mid-result")

    job = job_of(tmp_path, monkeypatch, start, n=1)
    with pytest.raises(StreamFailedError) as failed:
        job.await_termination(30)
    text = str(failed.value)
    assert text.startswith("streams[0] (dbo_t0), app_id 'dbo_t0', failed: ConnectionLostError:")
    assert "the connection to the source failed after its retries" in text
    assert text.endswith("run the job again: each stream resumes where it stopped")


def test_a_stream_that_failed_otherwise_gets_no_connection_advice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def start(app_id: str) -> Query:
        raise DataLossError("dbo_t0: purged", "dbo_t0")

    job = job_of(tmp_path, monkeypatch, start, n=1)
    with pytest.raises(StreamFailedError) as failed:
        job.await_termination(30)
    assert "connection" not in str(failed.value)


class OperationalError(Exception):
    """Stands in for pymssql's, by module: the job tells a driver's errors by their package."""


OperationalError.__module__ = "pymssql.exceptions"


def test_a_stream_failed_by_another_driver_error_says_it_is_the_drivers_and_what_to_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A chaos run's pre-flight read after a server restart ended with pymssql's bare
    # "(0, b'Unknown error')", a number the retries do not count as transient.
    def start(app_id: str) -> Query:
        raise RuntimeError("pre-flight read failed") from OperationalError(0, b"Unknown error")

    job = job_of(tmp_path, monkeypatch, start, n=1)
    with pytest.raises(StreamFailedError) as failed:
        job.await_termination(30)
    text = str(failed.value)
    assert "this error came from the SQL Server driver, not from mssql-cdc" in text
    assert "check that the server answers, then run the job again" in text
    assert "after its retries" not in text
