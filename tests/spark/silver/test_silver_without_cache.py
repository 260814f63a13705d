"""apply_changes on a session that refuses persist and cache, as serverless compute does.

Serverless compute's limits, caching among them, are listed at
https://learn.microsoft.com/en-us/azure/databricks/compute/serverless/limitations. The oracle is
the builder's source table (`SourceTable.rows`), kept in plain Python.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from mssql_cdc.silver import apply_changes
from tests.spark.support.caching import CachingRefused, refuse_caching
from tests.spark.support.silver_builder import SourceTable, random_commits


def apply(src: SourceTable) -> dict[str, object]:
    return dict(
        apply_changes(
            src.spark,
            src.bronze,
            src.silver,
            keys=["id"],
            control_table=src.control,
            facts_table=src.facts,
        )
    )


def test_the_refusing_session_refuses_persist_and_cache(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    refused = refuse_caching(monkeypatch)
    with pytest.raises(CachingRefused):
        spark.range(3).persist()
    with pytest.raises(CachingRefused):
        spark.range(3).cache()
    assert refused == ["persist", "cache"]


def test_apply_changes_appends_merges_and_rebuilds_where_caching_is_refused(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    refused = refuse_caching(monkeypatch)
    src = SourceTable(spark, str(tmp_path))
    rng = random.Random(42)
    random_commits(src, rng, 6, captured=False)
    first = src.whole_snapshot()
    src.event("bootstrap", first, rows=len(src.rows))
    random_commits(src, rng, 10)
    src.flush(rng)
    result = apply(src)  # into an empty silver: one append
    assert result["rebuilt"] is True
    assert src.silver_rows() == src.rows

    random_commits(src, rng, 12)  # updates, deletes and moved keys: an incremental MERGE
    src.flush(rng)
    result = apply(src)
    assert result["rebuilt"] is False
    assert result["applied_lsn"] == max(r["_start_lsn"] for r in src.bronze_rows())
    assert src.silver_rows() == src.rows

    version = src.silver_version()
    assert apply(src)["applied_lsn"] == result["applied_lsn"]  # nothing new: no MERGE
    assert src.silver_version() == version

    random_commits(src, rng, 5, captured=False)  # a loss gap, then a re-snapshot: a rebuild
    second = src.whole_snapshot()
    src.event("resnapshot", second, rows=len(src.rows))
    random_commits(src, rng, 4)
    src.flush(rng)
    result = apply(src)
    assert result["rebuilt"] is True
    assert result["applied_lsn"] == max(r["_start_lsn"] for r in src.bronze_rows())
    assert src.silver_rows() == src.rows
    assert refused == []  # nothing asked for a cache
