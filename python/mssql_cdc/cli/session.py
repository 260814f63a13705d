"""The CLI's Spark session, started only when a verb's library call first uses it."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from mssql_cdc.cli.output import fail
from mssql_cdc.errors import MssqlCdcError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["call_in_session", "session_on_first_use"]

T = TypeVar("T")


def session_on_first_use(
    *, verbose: bool, app_name: str
) -> tuple[SparkSession, Callable[[], None]]:
    """A SparkSession that starts on first use, and a function stopping it if it was started.

    The verb's library call checks every argument before it touches the session, so a bad one
    exits 2 without Spark ever starting (a JVM, seconds, a temporary warehouse). The
    stand-in is a SparkSession subclass, so the entry points' session check accepts it; every
    attribute is read from the real session, started by the first read.
    """
    from pyspark.sql import SparkSession

    started: list[SparkSession] = []
    ours: list[bool] = []

    def real() -> SparkSession:
        if not started:
            from mssql_cdc.spark import local_session

            ours.append(SparkSession.getActiveSession() is None)
            started.append(local_session(app_name, verbose=verbose))
        return started[0]

    class _Deferred(SparkSession):
        def __init__(self) -> None:  # no JVM until an attribute is read
            pass

        def __getattribute__(self, name: str) -> Any:
            return getattr(real(), name)

    def stop_if_started_here() -> None:
        if started and ours[0]:  # a session the caller had stays
            started[0].stop()

    return _Deferred(), stop_if_started_here


def call_in_session(
    verb: str, *, verbose: bool, call: Callable[[SparkSession], T]
) -> tuple[T | None, int]:
    """`call(spark)` with a session started on first use and stopped after it if started here.

    Returns (its result, 0), or (None, exit code) once the error is printed to stderr as
    `mssql-cdc VERB: ...`: 2 for a bad argument (a ValueError: nothing was done), 1 for a
    failure of the library, the filesystem or Spark.
    """
    spark, stop_if_started_here = session_on_first_use(
        verbose=verbose, app_name=f"mssql-cdc-{verb}"
    )
    try:
        try:
            return call(spark), 0
        finally:
            stop_if_started_here()
    except ValueError as exc:
        return None, fail(verb, exc, 2)
    except (MssqlCdcError, OSError) as exc:
        return None, fail(verb, exc, 1)
