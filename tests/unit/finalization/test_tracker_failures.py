"""`Tracker`: its failed passes are kept and counted, and it can be joined like a thread.

No Spark: the tracker is built over a stand-in session whose `streams` only records the
listener, and its passes read the facts through `newest_ends`, replaced here by one that
fails a given number of times.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from mssql_cdc.errors import ConfigError
from mssql_cdc.finalization import Tracker, TrackerFailure
from mssql_cdc.finalization import tracker as tracker_module
from mssql_cdc.tables import table_ref


class _Streams:
    def __init__(self) -> None:
        self.listeners: list[Any] = []

    def addListener(self, listener: Any) -> None:
        self.listeners.append(listener)

    def removeListener(self, listener: Any) -> None:
        self.listeners.remove(listener)


class _Session:
    def __init__(self) -> None:
        self.streams = _Streams()


class _Broken(RuntimeError):
    """What the stand-in facts read raises."""


@pytest.fixture
def failing_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every read of the facts fails while the list's first item is above 0 (counting it down),
    then reads no rows; the second item counts the reads."""
    left = [0, 0]

    def newest_ends(*args: object) -> dict[str, Any]:
        left[1] += 1
        if left[0] > 0:
            left[0] -= 1
            raise _Broken(f"facts unreadable ({left[0]} left)")
        return {}

    monkeypatch.setattr(tracker_module, "newest_ends", newest_ends)
    return left


@pytest.fixture
def tracker(tmp_path: Any) -> Iterator[Tracker]:
    started = Tracker(
        _Session(),  # type: ignore[arg-type]
        ("/lake/bronze",),
        table_ref(str(tmp_path / "facts"), argument="facts_table"),
        str(tmp_path / "control"),
        "hour",
    )
    started._start()
    yield started
    if started.is_alive():
        started._stopping = True
        started._wake.set()
        started.join(5)


def _passes(tracker: Tracker, reads: list[int], n: int) -> None:
    """Wake the thread n times, each time waiting until its pass is over."""
    for _ in range(n):
        before = reads[1]
        tracker._wake.set()
        deadline = time.monotonic() + 5
        while reads[1] == before and time.monotonic() < deadline:
            time.sleep(0.005)
        assert reads[1] == before + 1, "the tracker's thread did not pass"
        with tracker._pass_lock:  # the pass that read has finished
            pass


def test_a_failed_pass_is_kept_counted_and_typed(
    tracker: Tracker, failing_reads: list[int]
) -> None:
    assert tracker.failures == ()
    assert tracker.failure_count == 0
    assert tracker.last_failure is None
    failing_reads[0] = 2
    before = datetime.now(UTC).replace(tzinfo=None)  # the tracker keeps naive UTC
    _passes(tracker, failing_reads, 3)  # two failures, then a good pass
    assert tracker.failure_count == 2
    assert [f.number for f in tracker.failures] == [1, 2]
    last = tracker.last_failure
    assert isinstance(last, TrackerFailure)
    assert isinstance(last.error, _Broken)
    assert str(last.error) == "facts unreadable (0 left)"
    assert last.at.tzinfo is None
    assert before <= last.at <= datetime.now(UTC).replace(tzinfo=None)
    assert tracker.error is None  # the good pass after clears the current error only


def test_only_the_newest_failures_are_kept_but_all_are_counted(
    tracker: Tracker, failing_reads: list[int]
) -> None:
    failing_reads[0] = tracker_module.KEPT_FAILURES + 3
    _passes(tracker, failing_reads, tracker_module.KEPT_FAILURES + 3)
    assert tracker.failure_count == tracker_module.KEPT_FAILURES + 3
    assert len(tracker.failures) == tracker_module.KEPT_FAILURES
    assert tracker.failures[0].number == 4
    assert tracker.failures[-1].number == tracker_module.KEPT_FAILURES + 3
    assert isinstance(tracker.error, _Broken)


def test_join_waits_until_another_thread_stops_the_tracker(
    tracker: Tracker, failing_reads: list[int]
) -> None:
    tracker.join(timeout=0.05)
    assert tracker.is_alive()  # nothing stopped it: the timeout ran out
    stopper = threading.Timer(0.1, tracker.stop)
    stopper.start()
    tracker.join()
    assert not tracker.is_alive()
    stopper.join()


@pytest.mark.parametrize("timeout", [-1, "5", True])
def test_join_refuses_a_timeout_that_is_not_seconds(tracker: Tracker, timeout: object) -> None:
    with pytest.raises(ConfigError, match="timeout must be a number of seconds"):
        tracker.join(timeout)  # type: ignore[arg-type]
