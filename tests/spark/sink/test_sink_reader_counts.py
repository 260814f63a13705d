"""Under to_delta the batch's counts come from the reader's range files (decision 0380).

A stream of inserts, updates (before- and after-images) and deletes over several batches and
partitions; every facts row and every bronze commit's userMetadata must equal the counts of
that batch's rows in bronze, computed here in plain Python.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from mssql_cdc.facts.detail_payloads import format_time
from tests.spark.support.recovery_support import Orders


def oracle(rows: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """Per _batch_id: the facts' counts of the bronze rows, in plain Python."""
    by_batch: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_batch[row["_batch_id"]].append(row)
    return {
        batch: {
            "rows": len(rs),
            "min_lsn": min(r["_start_lsn"] for r in rs),
            "max_lsn": max(r["_start_lsn"] for r in rs),
            "min_commit_ts": min(r["_commit_ts"] for r in rs),
            "max_commit_ts": max(r["_commit_ts"] for r in rs),
            "deletes": sum(r["_operation"] == 1 for r in rs),
            "inserts": sum(r["_operation"] == 2 for r in rs),
            "updates": sum(r["_operation"] == 4 for r in rs),
        }
        for batch, rs in by_batch.items()
    }


def bronze_commits(spark: SparkSession, path: str) -> dict[int, dict[str, Any]]:
    history = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()
    found = {}
    for entry in history:
        if entry["operation"] == "WRITE" and entry["userMetadata"]:
            meta = json.loads(entry["userMetadata"])
            found[meta["batch_id"]] = meta
    return found


def test_facts_rows_and_commit_metadata_hold_each_batchs_counts(
    spark: SparkSession, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    orders = Orders(
        spark, tmp_path / "counts", extra={"numPartitions": "2", "maxCommitsPerBatch": "4"}
    )
    for key in range(6):
        orders.commit(("insert", key, "new"))
    orders.commit(("update", 1, "paid"), ("update", 2, "paid"), ("delete", 3, None))
    orders.commit(("delete", 4, None), ("insert", 9, "new"))
    orders.commit(("update", 9, "sent"))
    with caplog.at_level(logging.WARNING, logger="mssql_cdc.sink.writer"):
        orders.run(bootstrap=False, on_data_loss="fail")
    assert "counts" not in caplog.text  # the counts came from the reader, not the fallback

    bronze = orders.bronze()
    assert len(bronze) == 6 + 5 + 2 + 2  # an update is two rows
    expected = oracle(bronze)
    assert sorted(expected) == [0, 1, 2]  # 9 commits, 4 per batch

    facts = {r["batch_id"]: r for r in orders.facts_rows() if r["event"] is None}
    assert sorted(facts) == [0, 1, 2]
    for batch, counts in expected.items():
        assert {k: facts[batch][k] for k in counts} == counts, batch

    commits = bronze_commits(spark, orders.target)
    assert sorted(commits) == [0, 1, 2]
    for batch, counts in expected.items():
        meta = commits[batch]
        assert meta["rows"] == counts["rows"]
        assert (meta["min_lsn"], meta["max_lsn"]) == (counts["min_lsn"], counts["max_lsn"])
        assert meta["min_commit_ts"] == format_time(counts["min_commit_ts"])
        assert meta["max_commit_ts"] == format_time(counts["max_commit_ts"])
        assert (meta["deletes"], meta["inserts"], meta["updates"]) == (
            counts["deletes"],
            counts["inserts"],
            counts["updates"],
        )
