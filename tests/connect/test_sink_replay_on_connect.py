"""`delta_sink` on a Spark Connect session: a batch offered twice commits once, and a crash
between bronze's append and the facts commit is finished by the replay (docs/sink.md). The
story is the classic tier's (`sink_replay`), run here on the Connect session.
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession

from tests.spark.support.sink_replay import check_a_replayed_batch_commits_once


def test_a_replayed_batch_commits_once_and_a_crash_before_the_facts_is_finished_by_the_replay(
    spark: SparkSession, tmp_path: Path
) -> None:
    check_a_replayed_batch_commits_once(spark, str(tmp_path / "bronze"), str(tmp_path / "facts"))
