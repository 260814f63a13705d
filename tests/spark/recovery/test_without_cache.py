"""The stream and its loss and recovery on a session that refuses to cache, as serverless
compute does: every `DataFrame.persist` and `DataFrame.cache` raises (spec 20 section 2.4,
decision 1350).

Serverless compute's limits, caching among them, are listed at
https://learn.microsoft.com/en-us/azure/databricks/compute/serverless/limitations; the
refusal here is a plain exception from the Python call, before anything reaches Spark.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.classic.dataframe import DataFrame as ClassicDataFrame
from pyspark.sql.dataframe import DataFrame

from tests.spark.support.recovery_support import Orders


class CachingRefused(RuntimeError):
    """What the session raises for a persist or cache call."""


@pytest.fixture
def refusing(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """DataFrame.persist and DataFrame.cache raise; returns the calls that were refused."""
    refused: list[str] = []

    def refuse(name: str) -> Callable[..., DataFrame]:
        def call(self: DataFrame, *args: object, **kwargs: object) -> DataFrame:
            refused.append(name)
            raise CachingRefused(f"[NOT_SUPPORTED_WITH_SERVERLESS] {name} is not supported")

        return call

    for cls in (DataFrame, ClassicDataFrame):
        monkeypatch.setattr(cls, "persist", refuse("persist"))
        monkeypatch.setattr(cls, "cache", refuse("cache"))
    return refused


def test_the_refusal_fixture_refuses(spark: SparkSession, refusing: list[str]) -> None:
    with pytest.raises(CachingRefused):
        spark.range(3).persist()
    with pytest.raises(CachingRefused):
        spark.range(3).cache()
    assert refusing == ["persist", "cache"]


def test_a_stream_its_loss_and_its_recovery_run_where_caching_is_refused(
    spark: SparkSession, tmp_path: Path, refusing: list[str]
) -> None:
    orders = Orders(spark, tmp_path)
    orders.orders(3)
    orders.run()  # the bootstrap snapshot, then the stream
    orders.commit(("insert", 3, "new"))
    orders.commit(("update", 0, "paid"))
    orders.run()
    stream_rows = [f for f in orders.facts_rows() if f["event"] is None]
    # an insert, and an update's before and after images (operations 2, 3 and 4,
    # https://learn.microsoft.com/en-us/sql/relational-databases/system-functions/cdc-fn-cdc-get-all-changes-capture-instance-transact-sql)
    assert sum(f["rows"] for f in stream_rows) == 3
    assert sum(f["inserts"] for f in stream_rows) == 1
    assert sum(f["updates"] for f in stream_rows) == 1
    assert all(f["min_lsn"] is not None for f in stream_rows if f["rows"])

    orders.commit(("update", 1, "paid"))
    orders.commit(("delete", 2, None))
    orders.cleanup_past_everything()  # the stream had not read them: a loss
    orders.run()  # recovery: a re-snapshot, generation 1

    state = orders.state()
    assert state is not None
    assert state["generation"] == 1
    assert len(orders.events("resnapshot")) == 1
    orders.commit(("insert", 4, "new"))
    orders.run()
    assert orders.rebuilt() == orders.source() == [(0, "paid"), (1, "paid"), (3, "new"), (4, "new")]
    assert refusing == []  # nothing asked for a cache
