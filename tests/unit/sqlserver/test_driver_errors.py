"""Errors captured from the installed drivers themselves are classified for retry correctly.

Each case opens real connections through `open_session`, the library's own path, against a
loopback endpoint that refuses, stays silent, hangs up, or speaks just enough TDS to send one
server error. Which errors are transient comes from SQL Server's documentation, not the code.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Literal

import mssql_python
import pymssql
import pytest

from mssql_cdc.errors import ConnectError
from mssql_cdc.options.connection_string import ConnectionString
from mssql_cdc.sqlserver.tsql import retry
from mssql_cdc.sqlserver.tsql.drivers import Driver, Session, error_number, open_session
from mssql_cdc.sqlserver.tsql.statements import Statement
from tests.unit.support.driver_faults import (
    QUERY_MARK,
    FakeServer,
    closed_port,
    closing_listener,
    silent_listener,
)

# A failed connect() arrives as the library's ConnectError, the driver's error its cause.
DRIVER_ERRORS = (pymssql.Error, mssql_python.Error, ConnectError)
SECRET = "S3cret!pw"
LOGIN_FAILED = "Login failed for user 'etl'."
DEADLOCK = "Transaction (Process ID 51) was deadlocked on lock resources with another process."
UNAVAILABLE = (
    "Database 'shop' on server 'fake' is not currently available. Please retry the connection "
    "later. If the problem persists, contact customer support."
)


@contextmanager
def refusing() -> Iterator[int]:
    yield closed_port()


def server(number: int, message: str, at: Literal["login", "query"]) -> Endpoint:
    @contextmanager
    def serve() -> Iterator[int]:
        with FakeServer(number, message, at=at) as fake:
            yield fake.port

    return serve


Endpoint = Callable[[], AbstractContextManager[int]]


@dataclass(frozen=True)
class Case:
    name: str
    driver: Driver
    endpoint: Endpoint
    transient: bool
    number: int | None = None  # the server's error number, when the driver passes one on
    query: bool = False  # fail on a statement after a successful login


CASES = [
    *[
        Case(f"{driver} {what}", driver, endpoint, transient=True)
        for driver in ("pymssql", "mssql-python")
        for what, endpoint in (
            ("connection refused", refusing),
            ("login timeout", silent_listener),
            ("connection closed at once", closing_listener),
        )
    ],
    Case("pymssql login failed", "pymssql", server(18456, LOGIN_FAILED, "login"), False, 18456),
    Case("pymssql deadlock", "pymssql", server(1205, DEADLOCK, "query"), True, 1205, query=True),
    Case(
        "pymssql database unavailable",
        "pymssql",
        server(40613, UNAVAILABLE, "query"),
        True,
        40613,
        query=True,
    ),
    Case(
        "pymssql invalid object",
        "pymssql",
        server(208, "Invalid object name 'cdc.x_CT'.", "query"),
        False,
        208,
        query=True,
    ),
    Case(
        "mssql-python login failed",
        "mssql-python",
        server(18456, LOGIN_FAILED, "login"),
        False,
        18456,
    ),
    Case("mssql-python deadlock", "mssql-python", server(1205, DEADLOCK, "login"), True, 1205),
    Case(
        "mssql-python database unavailable",
        "mssql-python",
        server(40613, UNAVAILABLE, "login"),
        True,
        40613,
    ),
]


@pytest.fixture
def one_quick_retry(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    waits: list[float] = []
    monkeypatch.setattr(retry, "RETRIES", 1)
    monkeypatch.setattr(retry, "sleep", waits.append)
    return waits


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_real_driver_errors_are_retried_only_when_transient_and_never_show_the_password(
    case: Case, one_quick_retry: list[float], caplog: pytest.LogCaptureFixture
) -> None:
    attempts: list[int] = []
    connection = ConnectionString.parse(
        f"Server=127.0.0.1,{{port}};Database=shop;UID=etl;PWD={SECRET};Encrypt=no"
    )

    with case.endpoint() as port:
        text = connection.text.replace("{port}", str(port))

        def connect() -> Session:
            attempts.append(1)
            return open_session(case.driver, ConnectionString.parse(text), connect_timeout=1)

        def work(session: Session) -> None:
            if case.query:
                session.run(Statement(QUERY_MARK))

        slot = retry.Reconnecting(connect, Session.close)
        with caplog.at_level(logging.WARNING, logger="mssql_cdc.sqlserver"):
            with pytest.raises(DRIVER_ERRORS) as caught:
                retry.call_with_retries("latestOffset", slot, work)

    assert len(attempts) == (2 if case.transient else 1), repr(caught.value)
    assert len(one_quick_retry) == (1 if case.transient else 0)
    if case.number is not None:
        assert error_number(caught.value) == case.number, repr(caught.value)
    assert SECRET not in str(caught.value) + repr(caught.value.args) + caplog.text


@pytest.mark.parametrize("driver", ["pymssql", "mssql-python"])
def test_a_server_that_never_answers_fails_the_connect_within_about_its_timeout(
    driver: Driver,
) -> None:
    text = f"Server=127.0.0.1,{{port}};UID=etl;PWD={SECRET};Encrypt=no"
    with silent_listener() as port:
        connection = ConnectionString.parse(text.replace("{port}", str(port)))
        started = time.monotonic()
        with pytest.raises(DRIVER_ERRORS) as caught:
            open_session(driver, connection, connect_timeout=1)
        elapsed = time.monotonic() - started
    assert retry.is_transient(caught.value), repr(caught.value)
    assert elapsed < 3, f"{driver} took {elapsed:.1f} s to give up with connectTimeout 1"


def test_a_network_error_after_a_failed_login_is_still_transient_with_pymssql() -> None:
    # pymssql numbers a connect error with the last server message the process saw, so a
    # timeout after any refused login arrives numbered 18456, with only DB-Library's text.
    with FakeServer(18456, LOGIN_FAILED, at="login") as fake:
        text = f"Server=127.0.0.1,{fake.port};UID=etl;PWD={SECRET}"
        with pytest.raises(DRIVER_ERRORS) as refused_login:
            open_session("pymssql", ConnectionString.parse(text), connect_timeout=1)
    assert not retry.is_transient(refused_login.value)
    for endpoint in (refusing, silent_listener, closing_listener):
        with endpoint() as port:
            text = f"Server=127.0.0.1,{port};UID=etl;PWD={SECRET}"
            with pytest.raises(DRIVER_ERRORS) as network:
                open_session("pymssql", ConnectionString.parse(text), connect_timeout=1)
        assert retry.is_transient(network.value), repr(network.value)
        assert error_number(network.value) in (20002, 20003, 20009), repr(network.value)


def test_a_login_refused_again_is_still_18456_with_pymssql() -> None:
    # pymssql drops the text of a server message it has seen before, leaving only DB-Library's
    # 20018 ("General SQL Server error: Check messages from the SQL Server") after its number:
    # the server did answer, so the number is the server's, not 20018.
    for _ in range(2):
        with FakeServer(18456, LOGIN_FAILED, at="login") as fake:
            text = f"Server=127.0.0.1,{fake.port};UID=etl;PWD={SECRET}"
            with pytest.raises(DRIVER_ERRORS) as refused_login:
                open_session("pymssql", ConnectionString.parse(text), connect_timeout=5)
        assert error_number(refused_login.value) == 18456, repr(refused_login.value)
        assert not retry.is_transient(refused_login.value)


@pytest.mark.parametrize("driver", ["pymssql", "mssql-python"])
@pytest.mark.parametrize("endpoint", [refusing, silent_listener], ids=["refused", "silent"])
def test_a_server_that_does_not_answer_is_a_connect_error_naming_it_and_what_to_check(
    driver: Driver, endpoint: Endpoint
) -> None:
    with endpoint() as port:
        text = f"Server=127.0.0.1,{port};Database=shop;UID=etl;PWD={SECRET};Encrypt=no"
        with pytest.raises(ConnectError) as caught:
            open_session(driver, ConnectionString.parse(text), connect_timeout=1)
    message = str(caught.value)
    assert f"cannot connect to SQL Server '127.0.0.1,{port}' with backend '{driver}'" in message
    assert "check that the server is running and reachable" in message
    assert "connectTimeout (1 s now)" in message
    assert caught.value.server == f"127.0.0.1,{port}"
    assert isinstance(caught.value.__cause__, (pymssql.Error, mssql_python.Error))
    assert SECRET not in message + repr(caught.value.args)


def test_a_refused_login_is_a_connect_error_that_says_to_check_the_login() -> None:
    with FakeServer(18456, LOGIN_FAILED, at="login") as fake:
        text = f"Server=127.0.0.1,{fake.port};UID=etl;PWD={SECRET};Encrypt=no"
        with pytest.raises(ConnectError) as caught:
            open_session("mssql-python", ConnectionString.parse(text), connect_timeout=1)
    assert "check the login (UID) and its password (PWD)" in str(caught.value)
    assert SECRET not in str(caught.value)
