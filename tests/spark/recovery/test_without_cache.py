"""The stream and its whole recovery story, and `reconcile`, on a session that refuses to
cache, as serverless compute does: every `DataFrame.persist` and `DataFrame.cache` raises (spec
20 section 2.4, decisions 1348, 1350 and 1377). The story and its oracles are in
tests/spark/support/without_cache.py; tests/connect/test_without_cache_on_connect.py runs it on
Spark Connect.

Serverless compute's limits, caching among them, are listed at
https://learn.microsoft.com/en-us/azure/databricks/compute/serverless/limitations.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.classic.dataframe import DataFrame as ClassicDataFrame
from pyspark.sql.dataframe import DataFrame

from mssql_cdc import reconcile
from mssql_cdc.testing import InjectedFault, failpoints
from tests.spark.support.caching import CachingRefused, refuse_caching
from tests.spark.support.chunked_support import backfill
from tests.spark.support.recovery_support import Orders
from tests.spark.support.without_cache import the_whole_recovery_story

# The module, not the function the snapshot package's face exports under the same name.
backfill_module = importlib.import_module("mssql_cdc.snapshot.backfill")


@pytest.fixture
def refusing(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """DataFrame.persist and DataFrame.cache raise; returns the calls that were refused."""
    return refuse_caching(monkeypatch)


def test_the_refusal_fixture_refuses(spark: SparkSession, refusing: list[str]) -> None:
    with pytest.raises(CachingRefused):
        spark.range(3).persist()
    with pytest.raises(CachingRefused):
        spark.range(3).cache()
    assert refusing == ["persist", "cache"]


def test_bootstrap_stream_losses_re_snapshots_backfill_gap_deletes_and_silver_run_uncached(
    spark: SparkSession, tmp_path: Path, refusing: list[str]
) -> None:
    the_whole_recovery_story(spark, tmp_path / "story", refusing)


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


def test_a_backfill_wave_is_read_by_its_append_alone_in_one_spark_job(
    spark: SparkSession, tmp_path: Path
) -> None:
    """The wave's append is its one read: its chunk counts ride on it, so the wave runs no job
    of its own to count or cache (the waves' facts rows are written in process by deltalake)."""
    orders = Orders(spark, tmp_path / "waves", app_id="onejob-v1", extra={"numPartitions": "2"})
    orders.orders(8)  # keys 0..7: four chunks of two, two waves of two chunks
    orders.run(snapshot="chunked")
    jobs = []
    for wave in range(2):
        group = f"mssql-cdc-test-wave-{wave}"
        spark.sparkContext.setJobGroup(group, group)
        try:
            status = backfill(orders, chunk_rows=2, max_waves=1)
        finally:
            spark.sparkContext.setJobGroup("", "")
        jobs.append(len(spark.sparkContext.statusTracker().getJobIdsForGroup(group)))
        if wave == 0:
            assert status["state"] == "running"
    assert status["state"] == "done"
    assert jobs[0] == 1  # a wave that does not complete the snapshot: its append alone
    rows = sorted(
        (json.loads(f["detail"])["chunk"], f["rows"]) for f in orders.events("snapshot_chunk")
    )
    assert rows == [(0, 2), (1, 2), (2, 2), (3, 2)]  # keys [0,2), [2,4), [4,6), [6,8)


def test_a_wave_another_call_stored_first_gets_exact_chunk_rows_counted_in_bronze(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A wave commit lists its chunks without counts (they are observed on the append). A call
    that appends a wave another call stored first (Delta skips the append, so nothing is
    observed) counts that wave's chunk rows in bronze: exact, and appended once."""
    orders = Orders(spark, tmp_path / "race", app_id="race-v1", extra={"numPartitions": "2"})
    orders.orders(8)  # keys 0..7
    orders.run(snapshot="chunked")
    with failpoints({"backfill.after_wave_append": "raise"}), pytest.raises(InjectedFault):
        backfill(orders, chunk_rows=2, max_waves=1)  # "the other call": wave 0 stored, no rows
    assert orders.events("snapshot_chunk") == []

    # This call read bronze's recorded wave before the other call's append: it reads wave 0
    # again and appends it, and Delta skips that append.
    real = backfill_module.txn_version

    def before_the_other_call(spark: SparkSession, target: str, app_id: str) -> int | None:
        return None if "#snap." in app_id else real(spark, target, app_id)

    monkeypatch.setattr(backfill_module, "txn_version", before_the_other_call)
    assert backfill(orders, chunk_rows=2)["state"] == "done"
    history = spark.sql(f"DESCRIBE HISTORY delta.`{orders.target}`").collect()
    waves = [json.loads(h["userMetadata"] or "{}").get("wave") for h in history]
    assert sorted(w for w in waves if w is not None) == [0, 1]  # wave 0 appended once
    rows = sorted(
        (json.loads(f["detail"])["chunk"], json.loads(f["detail"])["wave"], f["rows"])
        for f in orders.events("snapshot_chunk")
    )
    assert rows == [(0, 0, 2), (1, 0, 2), (2, 1, 2), (3, 1, 2)]  # keys [0,2) .. [6,8)
    [done] = orders.events("bootstrap")
    assert done["rows"] == 8
    assert orders.rebuilt() == orders.source()
