"""The stream and its loss and recovery, and `reconcile`, on a session that refuses to cache,
as serverless compute does: every `DataFrame.persist` and `DataFrame.cache` raises (spec 20
section 2.4, decisions 1350 and 1377).

Serverless compute's limits, caching among them, are listed at
https://learn.microsoft.com/en-us/azure/databricks/compute/serverless/limitations; the
refusal here is a plain exception from the Python call, before anything reaches Spark.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.classic.dataframe import DataFrame as ClassicDataFrame
from pyspark.sql.dataframe import DataFrame

from mssql_cdc import reconcile
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


@pytest.fixture
def cache_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """DataFrame.persist and DataFrame.cache work as ever, and each call is recorded."""
    calls: list[str] = []
    for cls in (DataFrame, ClassicDataFrame):
        for name in ("persist", "cache"):
            original = getattr(cls, name)

            def call(
                self: DataFrame, *args: object, _name: str = name, _f: Any = original
            ) -> DataFrame:
                calls.append(_name)
                return _f(self, *args)  # type: ignore[no-any-return]

            monkeypatch.setattr(cls, name, call)
    return calls


def _bronze_of_orders(spark: SparkSession, tmp_path: Path) -> Orders:
    """dbo.orders streamed once: orders 0 to 39, order 5 paid, order 6 deleted."""
    orders = Orders(spark, tmp_path)
    orders.commit(*[("insert", k, "new") for k in range(40)])
    orders.commit(("update", 5, "paid"), ("delete", 6, None))
    orders.run()
    return orders


def test_reconcile_reads_the_target_again_where_caching_is_refused(
    spark: SparkSession, tmp_path: Path, refusing: list[str]
) -> None:
    orders = _bronze_of_orders(spark, tmp_path)
    found = reconcile(spark, orders.options(), orders.target, against="bronze", tiles=4)
    assert found.equal, found
    assert (found.source_rows, found.target_rows) == (39, 39)
    assert refusing == []  # an equal copy asks nothing more than each tile's digest

    # bronze loses order 17 and order 5 says 'wrong': narrowing asks for a cache, is refused,
    # and reads bronze again for each question
    spark.sql(f"DELETE FROM delta.`{orders.target}` WHERE order_id = 17")
    spark.sql(f"UPDATE delta.`{orders.target}` SET status = 'wrong' WHERE order_id = 5")
    found = reconcile(spark, orders.options(), orders.target, against="bronze", tiles=4)
    assert not found.equal
    assert (found.missing, found.extra, found.different) == ((17,), (), (5,))
    assert found.complete
    assert refusing == ["cache"]


def test_reconcile_caches_the_target_only_when_narrowing_asks_more(
    spark: SparkSession, tmp_path: Path, cache_calls: list[str]
) -> None:
    orders = _bronze_of_orders(spark, tmp_path)
    assert reconcile(spark, orders.options(), orders.target, against="bronze", tiles=4).equal
    assert cache_calls == []
    spark.sql(f"DELETE FROM delta.`{orders.target}` WHERE order_id = 17")
    found = reconcile(spark, orders.options(), orders.target, against="bronze", tiles=4)
    assert found.missing == (17,)
    assert cache_calls == ["cache"]
