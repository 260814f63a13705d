"""The guard both Spark tiers use: no test may leave a streaming query running."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession


@pytest.fixture(autouse=True)
def no_query_left_running(spark: SparkSession) -> Iterator[None]:
    yield
    leaked = [q.name or q.id for q in spark.streams.active]
    for query in spark.streams.active:
        query.stop()  # so the next test starts clean
    assert not leaked, f"the test left streaming queries running: {leaked}"
