"""A batch's counts: observed on its one append (decision 1350), and on a replay whose append
Delta skips, under to_delta, read from the reader's range files (decision 0380).

A stream of inserts, updates (before- and after-images) and deletes over several batches and
partitions; every facts row must equal the counts of that batch's rows in bronze, computed
here in plain Python (operation codes 1 delete, 2 insert, 3 and 4 an update's before and after
images, per https://learn.microsoft.com/en-us/sql/relational-databases/system-functions/cdc-fn-cdc-get-all-changes-capture-instance-transact-sql).
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import SparkSession

from mssql_cdc.facts import read_batch_commit
from mssql_cdc.testing import failpoints
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
        meta = read_batch_commit(entry["userMetadata"] or "")
        if entry["operation"] == "WRITE" and meta is not None:
            found[meta["batch_id"]] = dict(
                entry["userMetadata"] and json.loads(entry["userMetadata"])
            )
    return found


def history(orders: Orders) -> None:
    for key in range(6):
        orders.commit(("insert", key, "new"))
    orders.commit(("update", 1, "paid"), ("update", 2, "paid"), ("delete", 3, None))
    orders.commit(("delete", 4, None), ("insert", 9, "new"))
    orders.commit(("update", 9, "sent"))


def check_counts(orders: Orders) -> None:
    bronze = orders.bronze()
    assert len(bronze) == 6 + 5 + 2 + 2  # an update is two rows
    expected = oracle(bronze)
    assert sorted(expected) == [0, 1, 2]  # 9 commits, 4 per batch
    facts = {r["batch_id"]: r for r in orders.facts_rows() if r["event"] is None}
    assert sorted(facts) == [0, 1, 2]
    for batch, counts in expected.items():
        assert {k: facts[batch][k] for k in counts} == counts, batch


def test_facts_rows_hold_each_batchs_counts_and_commits_name_their_batch(
    spark: SparkSession, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    orders = Orders(
        spark, tmp_path / "counts", extra={"numPartitions": "2", "maxCommitsPerBatch": "4"}
    )
    history(orders)
    with caplog.at_level(logging.WARNING, logger="mssql_cdc.sink.writer"):
        orders.run(bootstrap=False, on_data_loss="fail")
    assert caplog.text == ""  # observed on the appends: no second read, no fallback
    check_counts(orders)
    commits = bronze_commits(spark, orders.target)
    assert commits == {
        b: {"batch_id": b, "app_id": orders.app_id, "generation": 0} for b in (0, 1, 2)
    }


def test_a_replay_past_the_bronze_append_takes_its_counts_from_the_readers_files(
    spark: SparkSession, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    orders = Orders(
        spark, tmp_path / "replay", extra={"numPartitions": "2", "maxCommitsPerBatch": "4"}
    )
    history(orders)
    with failpoints({"sink.after_target_write": "raise"}):
        query = orders.to_delta(bootstrap=False, on_data_loss="fail")
        with pytest.raises(StreamingQueryException, match=r"sink\.after_target_write"):
            query.awaitTermination(300)
    assert sorted(bronze_commits(spark, orders.target)) == [0]  # batch 0 in bronze only
    assert orders.facts_rows() == [] or all(r["event"] is not None for r in orders.facts_rows())
    with caplog.at_level(logging.WARNING, logger="mssql_cdc.sink.writer"):
        orders.run(bootstrap=False, on_data_loss="fail")
    assert "counts" not in caplog.text  # the replay's counts came from the reader's files
    check_counts(orders)
    assert sorted(bronze_commits(spark, orders.target)) == [0, 1, 2]
