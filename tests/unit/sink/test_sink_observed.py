"""The observed aggregates of a batch's append, read without a JVM (decision 1350): an append
that ran answers its values; one Delta skipped answers None at once on Spark Connect and after
a bounded wait on classic Spark, where the observation's own `get` would wait forever."""

from __future__ import annotations

import threading
import time
from datetime import datetime
from typing import Any, cast

import pytest

from mssql_cdc.facts import BatchAggregates
from mssql_cdc.sink import observed

VALUES = {
    "rows": 3,
    "min_lsn": "0x00000000000000000001",
    "max_lsn": "0x00000000000000000002",
    "min_commit_ts": datetime(2026, 10, 1, 12, 0, 1),
    "max_commit_ts": datetime(2026, 10, 1, 12, 0, 2),
    "deletes": 1,
    "inserts": 1,
    "updates": 0,
}


class ConnectObservation:
    """Spark Connect's shape: `get` holds what the action's response carried, {} for none."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.get = values


class ClassicObservation:
    """Classic Spark's shape: `get` blocks until an action ran, forever when none did."""

    def __init__(self, done: bool) -> None:
        self.ran = threading.Event()
        if done:
            self.ran.set()

    @property
    def get(self) -> dict[str, Any]:
        self.ran.wait()
        return VALUES


def batch(observation: object) -> observed.ObservedBatch:
    return observed.ObservedBatch(frame=cast(Any, None), observation=cast(Any, observation))


EXPECTED = BatchAggregates(
    rows=3,
    min_lsn="0x00000000000000000001",
    max_lsn="0x00000000000000000002",
    min_commit_ts=datetime(2026, 10, 1, 12, 0, 1),
    max_commit_ts=datetime(2026, 10, 1, 12, 0, 2),
    deletes=1,
    inserts=1,
    updates=0,
)


def test_an_append_that_ran_answers_its_observed_aggregates_on_either_session() -> None:
    assert batch(ConnectObservation(VALUES)).aggregates() == EXPECTED
    assert batch(ClassicObservation(done=True)).aggregates() == EXPECTED


def test_a_skipped_append_answers_none_at_once_on_connect() -> None:
    assert batch(ConnectObservation({})).aggregates() is None


def test_a_skipped_append_answers_none_on_classic_after_a_bounded_wait(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(observed, "_SETTLE_SECONDS", 0.1)
    started = time.monotonic()
    assert batch(ClassicObservation(done=False)).aggregates() is None
    assert time.monotonic() - started < 5


def test_a_classic_observation_completed_late_within_the_wait_still_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(observed, "_SETTLE_SECONDS", 5.0)
    late = ClassicObservation(done=False)
    threading.Timer(0.2, late.ran.set).start()
    assert batch(late).aggregates() == EXPECTED
