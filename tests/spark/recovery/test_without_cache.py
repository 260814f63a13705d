"""The stream and its whole recovery story on a session that refuses to cache, as serverless
compute does: every `DataFrame.persist` and `DataFrame.cache` raises (spec 20 section 2.4,
decisions 1348 and 1350). The story and its oracles are in tests/spark/support/without_cache.py;
tests/connect/test_without_cache_on_connect.py runs it on Spark Connect.

Serverless compute's limits, caching among them, are listed at
https://learn.microsoft.com/en-us/azure/databricks/compute/serverless/limitations.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

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
