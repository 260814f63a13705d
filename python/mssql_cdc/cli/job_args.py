"""What the verbs that run a stream's work share: the options file and a Spark session that
starts only once the arguments have passed their checks."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["read_options", "session_on_first_use"]


def read_options(path: str) -> dict[str, object]:
    """The source options of a job's JSON file, as `stream()` takes them.

    Raises:
        ValueError: the file cannot be read or holds no JSON object.
    """
    try:
        loaded = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"--options {path}: cannot read a JSON object ({exc})") from None
    if not isinstance(loaded, dict):
        raise ValueError(f"--options {path}: the file must hold one JSON object of options")
    return loaded


def session_on_first_use(
    app_name: str, *, verbose: bool
) -> tuple[SparkSession, Callable[[], None]]:
    """A SparkSession that starts on first use, and a function stopping it if it was started.

    The entry points check the options and every argument before they touch the session, so
    a bad one exits 2 without Spark ever starting (a JVM, seconds, a temporary warehouse). The
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
