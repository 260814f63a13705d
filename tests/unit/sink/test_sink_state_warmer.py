"""The sink's background computation of Delta state, against a fake session (no Spark here)."""

from __future__ import annotations

import logging
import threading
from types import SimpleNamespace
from typing import Any

import pytest

from mssql_cdc.sink.state_warmer import StateWarmer
from mssql_cdc.tables.refs import table_ref


class FakeSession:
    """Records the statements a warm sends; may block or fail on request."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.running = 0
        self.most_running = 0
        self.gate: threading.Event | None = None
        self.started = threading.Event()
        self.failing: set[str] = set()
        self._lock = threading.Lock()

    def sql(self, statement: str) -> Any:
        return SimpleNamespace(collect=lambda: self._run(statement))

    def _run(self, statement: str) -> list[Any]:
        with self._lock:
            self.calls.append(statement)
            self.running += 1
            self.most_running = max(self.most_running, self.running)
        self.started.set()
        try:
            if self.gate is not None:
                self.gate.wait(10)
            if any(path in statement for path in self.failing):
                raise RuntimeError("the session is stopped")
            return [SimpleNamespace(numFiles=1)]
        finally:
            with self._lock:
                self.running -= 1


def detail(path: str) -> str:
    return f"DESCRIBE DETAIL delta.`{path}`"


def test_a_warm_computes_the_state_of_the_tables_newest_snapshot() -> None:
    session = FakeSession()
    warmer = StateWarmer(session)  # type: ignore[arg-type]

    warmer.warm(table_ref("/lake/bronze"))
    warmer.warm(table_ref("/lake/facts"))

    assert warmer.idle(10)
    assert sorted(session.calls) == [detail("/lake/bronze"), detail("/lake/facts")]


def test_a_warm_asked_for_while_one_runs_follows_it_once_never_beside_it() -> None:
    session = FakeSession()
    session.gate = threading.Event()
    warmer = StateWarmer(session)  # type: ignore[arg-type]
    bronze = table_ref("/lake/bronze")

    warmer.warm(bronze)
    assert session.started.wait(10)
    warmer.warm(bronze)  # a commit while the first computation runs
    warmer.warm(bronze)  # and another: one more computation serves both
    session.gate.set()

    assert warmer.idle(10)
    assert session.calls == [detail("/lake/bronze"), detail("/lake/bronze")]
    assert session.most_running == 1


def test_a_failed_warm_is_logged_not_raised_and_that_table_is_not_warmed_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    session = FakeSession()
    session.failing.add("/lake/facts")
    warmer = StateWarmer(session)  # type: ignore[arg-type]

    with caplog.at_level(logging.DEBUG, logger="mssql_cdc.sink.writer"):
        warmer.warm(table_ref("/lake/facts"))
        assert warmer.idle(10)
        warmer.warm(table_ref("/lake/facts"))
        assert warmer.idle(10)

    assert session.calls == [detail("/lake/facts")]
    assert "the session is stopped" in caplog.text


def test_a_catalog_table_is_warmed_by_its_quoted_name() -> None:
    session = FakeSession()
    warmer = StateWarmer(session)  # type: ignore[arg-type]

    warmer.warm(table_ref("ops.Orders"))

    assert warmer.idle(10)
    assert session.calls == ["DESCRIBE DETAIL `ops`.`Orders`"]
