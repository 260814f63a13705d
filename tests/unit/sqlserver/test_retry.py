"""Driver-side retries: transient errors retried on a new connection with backoff, decisions not."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from mssql_cdc.errors import ConfigError, DataLossError, SchemaChangedError
from mssql_cdc.sqlserver.tsql import retry


def driver_error(module: str, name: str, *args: Any, **attrs: Any) -> Exception:
    cls = type(name, (Exception,), {"__module__": module})
    exc = cls(*args)
    for key, value in attrs.items():
        setattr(exc, key, value)
    return exc


def mssql_python(driver_error_text: str, ddbc: str = "") -> Exception:
    return driver_error(
        "mssql_python.exceptions",
        "OperationalError",
        f"Driver Error: {driver_error_text}",
        driver_error=driver_error_text,
        ddbc_error=ddbc,
    )


def pymssql(number: int) -> Exception:
    return driver_error("pymssql.exceptions", "OperationalError", number, b"DB-Lib error")


TRANSIENT = [
    mssql_python("Communication link failure"),
    mssql_python("Client unable to establish connection"),
    mssql_python("Timeout expired"),
    mssql_python("Connection timeout expired"),
    mssql_python("Serialization failure"),
    driver_error(
        "mssql_python.exceptions",
        "DatabaseError",
        "x",
        ddbc_error="[SQL Server]Transaction was deadlocked. (1205)",
    ),
    *[pymssql(n) for n in (1205, 20003, 20006, 20009, 20017, 20047)],
    driver_error("mssql_cdc.errors", "BusyError", "database is locked"),
    driver_error("pyodbc", "OperationalError", "x", sqlstate="08S01"),
]
NOT_TRANSIENT = [
    mssql_python(
        "Invalid authorization specification", "[SQL Server]Login failed for user 'u'. (18456)"
    ),
    mssql_python("Communication link failure", "[SQL Server]Login failed for user 'u'. (18456)"),
    mssql_python("General error"),
    driver_error(
        "mssql_python.exceptions", "ProgrammingError", "x", driver_error="Timeout expired"
    ),  # right text, wrong class
    pymssql(18456),
    pymssql(208),
    driver_error("pyodbc", "Error", "x", sqlstate="HY000"),
    driver_error("pyodbc", "Error", "x", sqlstate="28000"),
    DataLossError("purged", "dbo_orders"),
    SchemaChangedError("retyped", "dbo_orders"),
    ConfigError("bad option"),
    ValueError("bad value"),
    PermissionError("no grant"),
    RuntimeError("something else"),
]


@pytest.mark.parametrize("exc", TRANSIENT, ids=lambda e: f"{type(e).__name__}:{e.args[0]}")
def test_transient_errors_are_recognised(exc: Exception) -> None:
    assert retry.is_transient(exc)


@pytest.mark.parametrize("exc", NOT_TRANSIENT, ids=lambda e: f"{type(e).__name__}:{e.args[0]}")
def test_decisions_and_other_errors_are_not_transient(exc: Exception) -> None:
    assert not retry.is_transient(exc)


class Clock:
    def __init__(self) -> None:
        self.waits: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(retry, "sleep", fake.sleep)
    return fake


class Factory:
    """Connections numbered from 1; the first `failures` calls of the work fail with `error`."""

    def __init__(self, failures: int, error: Exception) -> None:
        self.failures, self.error = failures, error
        self.opened: list[int] = []
        self.closed: list[int] = []
        self.calls = 0

    def slot(self) -> retry.Reconnecting[int]:
        def connect() -> int:
            self.opened.append(len(self.opened) + 1)
            return self.opened[-1]

        return retry.Reconnecting(connect, self.closed.append)

    def work(self, connection: int) -> str:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error
        return f"result on connection {connection}"


@pytest.mark.parametrize("failures", [0, 1, 2, 3])
def test_a_method_failing_k_times_transiently_returns_as_if_healthy(
    failures: int, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    factory = Factory(failures, pymssql(20009))
    with caplog.at_level(logging.WARNING, logger="mssql_cdc.sqlserver"):
        result = retry.call_with_retries("latestOffset", factory.slot(), factory.work)
    assert result == f"result on connection {failures + 1}"
    assert factory.opened == list(range(1, failures + 2))
    assert factory.closed == list(range(1, failures + 1))  # each broken one dropped
    assert len(clock.waits) == failures
    for k, wait in enumerate(clock.waits, start=1):
        assert 2 ** (k - 1) <= wait <= 2**k
    messages = [r.getMessage() for r in caplog.records]
    assert messages == [
        "latestOffset: transient error (OperationalError: (20009, b'DB-Lib error')); "
        f"retry {k} of 3 on a new connection"
        for k in range(1, failures + 1)
    ]


def test_after_three_retries_the_last_error_is_raised_unchanged(clock: Clock) -> None:
    error = mssql_python("Communication link failure")
    factory = Factory(10, error)
    with pytest.raises(type(error)) as caught:
        retry.call_with_retries("partitions", factory.slot(), factory.work)
    assert caught.value is error
    assert factory.calls == 4
    assert len(clock.waits) == 3
    assert factory.closed == [1, 2, 3, 4]


@pytest.mark.parametrize(
    "decision",
    [
        DataLossError("purged", "ci"),
        SchemaChangedError("retyped", "ci"),
        ConfigError("bad"),
        PermissionError("grant"),
        pymssql(18456),
    ],
    ids=lambda e: type(e).__name__ + str(e.args[0]),
)
def test_decisions_are_raised_at_once_on_the_same_connection(
    decision: Exception, clock: Clock
) -> None:
    factory = Factory(1, decision)
    with pytest.raises(type(decision)) as caught:
        retry.call_with_retries("schema", factory.slot(), factory.work)
    assert caught.value is decision
    assert (factory.calls, clock.waits, factory.closed) == (1, [], [])


def test_a_transient_error_while_connecting_is_retried_too(clock: Clock) -> None:
    attempts: list[int] = []

    def connect() -> str:
        attempts.append(1)
        if len(attempts) < 3:
            raise mssql_python("Client unable to establish connection")
        return "conn"

    slot = retry.Reconnecting(connect, lambda c: None)
    assert retry.call_with_retries("initialOffset", slot, lambda c: c + " ok") == "conn ok"
    assert len(clock.waits) == 2


def test_a_connection_that_fails_to_close_is_still_dropped(clock: Clock) -> None:
    def bad_close(connection: int) -> None:
        raise OSError("socket already gone")

    factory = Factory(1, pymssql(20006))
    slot = retry.Reconnecting(lambda: 7, bad_close)
    assert retry.call_with_retries("schema", slot, factory.work) == "result on connection 7"
