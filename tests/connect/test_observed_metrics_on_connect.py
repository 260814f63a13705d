"""The `mssql_cdc` observed metric on a Spark Connect session: each batch's figures (counts,
LSNs, retention headroom, lags, events) reach `query.recentProgress` and a client-side
StreamingQueryListener, equal to its facts row; the story is the classic tier's
(tests/spark/support/observed_story.py)."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession

from tests.spark.support.observed_story import check_batches_observe_their_facts


def test_each_batch_observes_its_facts_figures_in_the_progress_and_the_prometheus_text(
    spark: SparkSession, tmp_path: Path
) -> None:
    check_batches_observe_their_facts(spark, tmp_path / "s")
