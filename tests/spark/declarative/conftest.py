"""The declarative pipeline runs in processes of its own: no SparkSession in this one.

The Spark tier's guard against leaked streaming queries needs the session fixture, which would
start a JVM here that nothing uses; this folder's tests start no query in this process.
"""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def no_query_left_running() -> None:
    """Overrides the Spark tier's guard of the same name for this folder."""
