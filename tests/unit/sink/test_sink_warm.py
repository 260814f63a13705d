"""The sink's background computation of Delta state, against a fake JVM (no Spark here)."""

from __future__ import annotations

import logging
import threading
from types import SimpleNamespace
from typing import Any

import pytest

from mssql_cdc.sink.warm import StateWarmer
from mssql_cdc.tables.refs import table_ref


class FakeDeltaLog:
    """Counts the state computations per table path; may block or fail on request."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.running = 0
        self.most_running = 0
        self.gate: threading.Event | None = None
        self.started = threading.Event()
        self.failing: set[str] = set()
        self._lock = threading.Lock()

    def forTable(self, session: object, path: str) -> Any:
        return SimpleNamespace(update=lambda *args: SimpleNamespace(transactions=self._for(path)))

    def _for(self, path: str) -> Any:
        def transactions() -> Any:
            with self._lock:
                self.calls.append(path)
                self.running += 1
                self.most_running = max(self.most_running, self.running)
            self.started.set()
            try:
                if self.gate is not None:
                    self.gate.wait(10)
                if path in self.failing:
                    raise RuntimeError("py4j: the session is stopped")
                return SimpleNamespace(size=lambda: 1)
            finally:
                with self._lock:
                    self.running -= 1

        return transactions


def fake_spark(delta_log: FakeDeltaLog) -> Any:
    jvm = SimpleNamespace(
        org=SimpleNamespace(
            apache=SimpleNamespace(
                spark=SimpleNamespace(
                    sql=SimpleNamespace(delta=SimpleNamespace(DeltaLog=delta_log))
                )
            )
        ),
        scala=SimpleNamespace(Option=SimpleNamespace(empty=lambda: None)),
    )
    return SimpleNamespace(_jvm=jvm, _jsparkSession=object())


def test_a_warm_computes_the_state_of_the_tables_newest_snapshot() -> None:
    delta_log = FakeDeltaLog()
    warmer = StateWarmer(fake_spark(delta_log))

    warmer.warm(table_ref("/lake/bronze"))
    warmer.warm(table_ref("/lake/facts"))

    assert warmer.idle(10)
    assert sorted(delta_log.calls) == ["/lake/bronze", "/lake/facts"]


def test_a_warm_asked_for_while_one_runs_follows_it_once_never_beside_it() -> None:
    delta_log = FakeDeltaLog()
    delta_log.gate = threading.Event()
    warmer = StateWarmer(fake_spark(delta_log))
    bronze = table_ref("/lake/bronze")

    warmer.warm(bronze)
    assert delta_log.started.wait(10)
    warmer.warm(bronze)  # a commit while the first computation runs
    warmer.warm(bronze)  # and another: one more computation serves both
    delta_log.gate.set()

    assert warmer.idle(10)
    assert delta_log.calls == ["/lake/bronze", "/lake/bronze"]
    assert delta_log.most_running == 1


def test_a_failed_warm_is_logged_not_raised_and_that_table_is_not_warmed_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    delta_log = FakeDeltaLog()
    delta_log.failing.add("/lake/facts")
    warmer = StateWarmer(fake_spark(delta_log))

    with caplog.at_level(logging.DEBUG, logger="mssql_cdc.sink.writer"):
        warmer.warm(table_ref("/lake/facts"))
        assert warmer.idle(10)
        warmer.warm(table_ref("/lake/facts"))
        assert warmer.idle(10)

    assert delta_log.calls == ["/lake/facts"]
    assert "the session is stopped" in caplog.text


def test_without_a_jvm_as_on_spark_connect_nothing_is_started() -> None:
    warmer = StateWarmer(SimpleNamespace())  # type: ignore[arg-type]

    warmer.warm(table_ref("/lake/bronze"))

    assert warmer.idle(1)
