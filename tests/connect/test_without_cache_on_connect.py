"""The whole recovery story of tests/spark/recovery/test_without_cache.py on a Spark Connect
session that refuses to cache, as serverless compute does (decisions 1348 and 1350): bootstrap,
a stream, a full and a chunked re-snapshot with gap deletes, backfill() and silver, with every
`DataFrame.persist` and `DataFrame.cache` raising. The story and its oracles are in
tests/spark/support/without_cache.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from tests.spark.support.caching import refuse_caching
from tests.spark.support.without_cache import the_whole_recovery_story


def test_the_whole_recovery_story_runs_on_connect_where_caching_is_refused(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    refused = refuse_caching(monkeypatch)
    with pytest.raises(RuntimeError):
        spark.range(3).persist()  # the refusal holds on this session's DataFrames
    refused.clear()
    the_whole_recovery_story(spark, tmp_path / "story", refused)
