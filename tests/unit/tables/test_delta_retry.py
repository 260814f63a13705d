"""Retrying Delta's concurrent-commit conflicts, with a fake clock."""

from __future__ import annotations

import pytest

from mssql_cdc.tables.retry import is_concurrent_commit_error, retry_on_conflict


class ConcurrentAppendException(Exception):
    """Named like Delta's, as the py4j conversion names it."""


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_conflicts_are_recognised_by_class_name_or_error_condition() -> None:
    assert is_concurrent_commit_error(ConcurrentAppendException("x"))
    assert is_concurrent_commit_error(RuntimeError("[DELTA_METADATA_CHANGED] changed"))
    assert is_concurrent_commit_error(RuntimeError("[DELTA_CONCURRENT_APPEND.X] append"))
    assert not is_concurrent_commit_error(RuntimeError("[TABLE_OR_VIEW_NOT_FOUND] t"))


def test_a_conflict_is_retried_with_doubling_delays_until_it_succeeds() -> None:
    clock = FakeClock()
    failures = iter([ConcurrentAppendException("1")] * 6)

    def action() -> str:
        error = next(failures, None)
        if error is not None:
            raise error
        return "done"

    result = retry_on_conflict(
        action, what="t", sleep=clock.sleep, clock=lambda: clock.now, jitter=lambda: 1.0
    )
    assert result == "done"
    assert clock.sleeps == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]


def test_conflicts_past_the_budget_re_raise_the_last_one() -> None:
    clock = FakeClock()
    calls = 0

    def action() -> None:
        nonlocal calls
        calls += 1
        raise ConcurrentAppendException(f"attempt {calls}")

    with pytest.raises(ConcurrentAppendException, match="attempt"):
        retry_on_conflict(
            action, what="t", sleep=clock.sleep, clock=lambda: clock.now, jitter=lambda: 1.0
        )
    assert clock.now <= 60.0
    assert sum(clock.sleeps) == clock.now
    assert calls == len(clock.sleeps) + 1


def test_any_other_error_is_raised_at_once() -> None:
    clock = FakeClock()

    def action() -> None:
        raise KeyError("not a conflict")

    with pytest.raises(KeyError):
        retry_on_conflict(action, what="t", sleep=clock.sleep, clock=lambda: clock.now)
    assert clock.sleeps == []
