"""Driver-side retries of transient connection errors (docs/source.md, 'Processes').

A driver method (schema(), initialOffset, latestOffset, partitions, ...) runs through
`call_with_retries`: on a transient error it drops its connection, waits, and runs again from
the start on a new one, at most `RETRIES` times; then the last error is raised unchanged.
Decisions (data loss, schema changes, bad options, missing grants) are never retried. Executors
never retry: Spark reruns the task.

`RETRIES`, `sleep` and `uniform` are module attributes so tests can replace them.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import Generic, TypeVar

from mssql_cdc.errors import ConnectError, DataLossError, SchemaChangedError
from mssql_cdc.sqlserver.tsql.drivers import error_number

__all__ = ["RETRIES", "Reconnecting", "call_with_retries", "is_transient", "sleep", "uniform"]

_log = logging.getLogger("mssql_cdc.sqlserver")

RETRIES = 3
sleep: Callable[[float], None] = time.sleep
uniform: Callable[[float, float], float] = random.uniform

S = TypeVar("S")
T = TypeVar("T")

# mssql-python reports SQLSTATEs only through these texts (its exceptions.py mapping) for
# class 08, HYT00, HYT01 and 40001.
_MSSQL_PYTHON_TRANSIENT = frozenset(
    {
        "Client unable to establish connection",
        "Connection name in use",
        "Connection not open",
        "Server rejected the connection",
        "Connection failure during transaction",
        "Communication link failure",
        "Serialization failure",
        "Timeout expired",
        "Connection timeout expired",
    }
)
# Server errors that a new connection may not meet: a deadlock victim, and the Azure SQL errors
# Microsoft documents as transient (retry on a new connection): 40613 database not currently
# available, 40197 service error, 40501 service busy, 49918 not enough
# resources. A lock timeout (1222) is not: it fails the task, which Spark reruns.
_SERVER_TRANSIENT = frozenset({1205, 40197, 40501, 40613, 49918})
# DB-Library's network errors: connection failed, timed out, unable to connect, read, write.
_PYMSSQL_TRANSIENT = _SERVER_TRANSIENT | {20002, 20003, 20006, 20009, 20017, 20047}
# ODBC's whole report of a severity 20+ server error (the server ended the session): the
# server's own text and number are not passed on (captured with 40501).
_MSSQL_PYTHON_SESSION_ENDED = "Connection may have been terminated by the server"
_LOGIN_FAILED = 18456
_DECISIONS: tuple[type[BaseException], ...] = (
    DataLossError,
    SchemaChangedError,
    ValueError,
    PermissionError,
    ImportError,
)


def is_transient(exc: BaseException) -> bool:
    """Tell whether `exc` is a transient connection error worth a retry on a new connection.

    Transient: SQLSTATE class 08, HYT00, HYT01, 40001 (mssql-python: its OperationalError
    texts for those states, errors 1205, 40197, 40501, 40613, 49918, and a session the server
    ended); pymssql errors 1205, 40197, 40501, 40613, 49918, 20002, 20003, 20006, 20009, 20017,
    20047, from a statement or from connect(); the emulator's BusyError. Never a login failure,
    a decision of this library (DataLossError, SchemaChangedError, ValueError,
    PermissionError) or anything else. A ConnectError is as transient as the driver error it
    wraps.
    """
    if isinstance(exc, ConnectError) and exc.__cause__ is not None:
        return is_transient(exc.__cause__)
    if isinstance(exc, _DECISIONS) or not isinstance(exc, Exception):
        return False
    number = error_number(exc)
    if number == _LOGIN_FAILED:
        return False
    if any(cls.__name__ == "BusyError" for cls in type(exc).__mro__):
        return True
    package = type(exc).__module__.split(".")[0]
    if package == "mssql_python":
        if number in _SERVER_TRANSIENT:
            return True
        if _MSSQL_PYTHON_SESSION_ENDED in (getattr(exc, "ddbc_error", None) or str(exc)):
            return True
        is_operational = any(cls.__name__ == "OperationalError" for cls in type(exc).__mro__)
        return is_operational and getattr(exc, "driver_error", None) in _MSSQL_PYTHON_TRANSIENT
    if package in ("pymssql", "_mssql"):
        return number in _PYMSSQL_TRANSIENT
    state = getattr(exc, "sqlstate", None)
    if isinstance(state, str):
        return state.startswith("08") or state in ("HYT00", "HYT01", "40001")
    return False


class Reconnecting(Generic[S]):
    """A connection opened on first use and dropped after a transient error."""

    def __init__(self, connect: Callable[[], S], close: Callable[[S], None]) -> None:
        self._connect = connect
        self._close = close
        self._current: S | None = None

    def get(self) -> S:
        if self._current is None:
            self._current = self._connect()
        return self._current

    def drop(self) -> None:
        """Close the current connection, if any; a broken one may fail to close, harmlessly."""
        current, self._current = self._current, None
        if current is None:
            return
        try:
            self._close(current)
        except Exception as exc:  # noqa: BLE001 - the connection is being abandoned anyway
            _log.debug("closing a dropped connection failed: %s", exc)


def call_with_retries(method: str, slot: Reconnecting[S], work: Callable[[S], T]) -> T:
    """Run `work` on the slot's connection, retrying transient errors on a new connection.

    Wait k (1..RETRIES) is uniform in [2**(k-1), 2**k] seconds. Each retry logs a WARNING
    naming `method`, the error's class and first line, and the attempt.

    Raises:
        The first non-transient error at once, or the last transient one after RETRIES retries,
        unchanged.
    """
    attempt = 0
    while True:
        try:
            return work(slot.get())
        except Exception as exc:  # re-raised unless transient and retries remain
            if not is_transient(exc):
                raise
            slot.drop()  # a transient error leaves the connection unusable
            if attempt >= RETRIES:
                raise
            attempt += 1
            first_line = (str(exc).splitlines() or [""])[0]
            _log.warning(
                "%s: transient error (%s: %s); retry %d of %d on a new connection",
                method,
                type(exc).__name__,
                first_line,
                attempt,
                RETRIES,
            )
            sleep(uniform(2.0 ** (attempt - 1), 2.0**attempt))
