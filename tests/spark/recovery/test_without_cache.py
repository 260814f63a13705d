"""The stream and its whole recovery story on a session that refuses to cache, as serverless
compute does: every `DataFrame.persist` and `DataFrame.cache` raises (spec 20 section 2.4,
decisions 1348 and 1350). The story and its oracles are in tests/spark/support/without_cache.py;
tests/connect/test_without_cache_on_connect.py runs it on Spark Connect.

Serverless compute's limits, caching among them, are listed at
https://learn.microsoft.com/en-us/azure/databricks/compute/serverless/limitations.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from tests.spark.support.chunked_support import backfill
from tests.spark.support.recovery_support import Orders
from tests.spark.support.without_cache import (
    CachingRefused,
    refuse_caching,
    the_whole_recovery_story,
)


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
