"""`delta_sink` on a Spark Connect session: a batch offered twice commits once, and a crash
between bronze's append and the facts commit is finished by the replay (docs/sink.md). The
story is the classic tier's (`sink_replay`), run here on the Connect session.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame

from tests.spark.support.sink_replay import check_a_replayed_batch_commits_once


def test_a_replayed_batch_commits_once_and_a_crash_before_the_facts_is_finished_by_the_replay(
    spark: SparkSession, tmp_path: Path
) -> None:
    check_a_replayed_batch_commits_once(spark, str(tmp_path / "bronze"), str(tmp_path / "facts"))


def test_the_same_story_runs_on_a_connect_session_that_refuses_to_cache(
    spark: SparkSession,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # serverless refuses caching (decision 1350); the one-pass sink never asks for it
    refused: list[str] = []

    def refuse(self: ConnectDataFrame, *args: object, **kwargs: object) -> ConnectDataFrame:
        refused.append("persist or cache")
        raise RuntimeError("caching is not supported on this platform")

    monkeypatch.setattr(ConnectDataFrame, "persist", refuse)
    monkeypatch.setattr(ConnectDataFrame, "cache", refuse)
    with pytest.raises(RuntimeError, match="caching is not supported"):
        spark.range(1).persist()
    refused.clear()
    with caplog.at_level(logging.WARNING, logger="mssql_cdc.sink.writer"):
        check_a_replayed_batch_commits_once(
            spark, str(tmp_path / "bronze"), str(tmp_path / "facts")
        )
    assert refused == []
    # each appended batch's aggregates came from its observation, not from a second read
    assert not [r for r in caplog.records if "read from the batch again" in r.getMessage()]
