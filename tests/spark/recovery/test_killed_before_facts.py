"""A driver killed between a batch's bronze append and its facts row, then CDC cleanup past
that batch: the batch still gets exactly one facts row, counted from bronze (decision 1423).

A chaos run (docs/reliability.md) found the batch left without its row when the restart's
pre-flight found the loss and opened the next generation, which never replays the old one's
batch. The oracle is bronze's own rows of the batch, read with plain pyarrow from the files its
commit added, counted in plain Python with SQL Server's operation codes: 1 delete, 2 insert,
4 update after-image, per
https://learn.microsoft.com/en-us/sql/relational-databases/system-functions/cdc-fn-cdc-get-all-changes-capture-instance-transact-sql
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from tests.spark.recovery.test_crash_matrix import crash_in_child
from tests.spark.support.recovery_support import Orders


def bronze_commits(target: str) -> dict[tuple[str, int], list[str]]:
    """Each micro-batch commit of bronze, by (sink id, batch id): the files it added."""
    found: dict[tuple[str, int], list[str]] = {}
    for path in sorted(Path(target, "_delta_log").glob("*.json")):
        actions = [json.loads(line) for line in path.read_text().splitlines() if line]
        info = next((a["commitInfo"] for a in actions if "commitInfo" in a), {})
        marker = json.loads(info.get("userMetadata") or "null")
        if isinstance(marker, dict) and "batch_id" in marker:
            key = (marker["app_id"], marker["batch_id"])
            assert key not in found, f"two bronze commits of {key}"
            found[key] = [unquote(a["add"]["path"]) for a in actions if "add" in a]
    return found


def counts_of_files(target: str, files: list[str]) -> tuple[Any, ...]:
    """(rows, inserts, updates, deletes, min_lsn, max_lsn) of the rows in `files`."""
    rows: list[dict[str, Any]] = []
    for name in files:
        rows += pq.read_table(Path(target, name), columns=["_start_lsn", "_operation"]).to_pylist()
    ops = Counter(r["_operation"] for r in rows)
    lsns = [r["_start_lsn"] for r in rows]
    return (len(rows), ops[2], ops[4], ops[1], min(lsns), max(lsns))


def counts_of_row(row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(row[c] for c in ("rows", "inserts", "updates", "deletes", "min_lsn", "max_lsn"))


def killed_batch(tmp_path: Path, spark: SparkSession) -> tuple[Orders, tuple[str, int]]:
    """A stream killed at `sink.after_target_write` in a batch of four changes, then CDC
    cleanup past everything; returns the stream and the killed batch's (sink id, batch id)."""
    orders = Orders(spark, tmp_path / "case")
    orders.orders(3)
    orders.run()
    orders.commit(("update", 1, "paid"), ("insert", 7, "new"))
    orders.commit(("delete", 2, None), ("insert", 8, "new"))
    crash_in_child(orders, "sink.after_target_write", options=orders.options())
    batches = [f["batch_id"] for f in orders.facts_rows() if f["event"] is None]
    killed = max(k for k in bronze_commits(orders.target) if k[0] == orders.app_id)
    assert killed[1] not in batches  # the kill left the batch without its facts row
    orders.cleanup_past_everything()
    return orders, killed


def test_a_batch_killed_before_its_facts_row_gets_it_from_bronze_when_a_loss_opens_a_generation(
    spark: SparkSession, tmp_path: Path
) -> None:
    orders, (sink, batch) = killed_batch(tmp_path, spark)

    orders.run()

    state = orders.state()
    assert state is not None
    assert state["generation"] == 1  # the recovery went on
    rows = [
        f
        for f in orders.facts_rows()
        if f["event"] is None and f["app_id"] == sink and f["batch_id"] == batch
    ]
    assert len(rows) == 1
    files = bronze_commits(orders.target)[(sink, batch)]
    assert counts_of_row(rows[0]) == counts_of_files(orders.target, files)
    assert counts_of_row(rows[0])[0] >= 4  # the two commits of the killed batch
    assert orders.rebuilt() == orders.source()


def test_a_replayed_batch_whose_range_was_skipped_counts_bronze_s_rows_of_it(
    spark: SparkSession, tmp_path: Path
) -> None:
    orders, (sink, batch) = killed_batch(tmp_path, spark)
    orders.extra = {"failOnDataLoss": "false"}

    orders.run(on_data_loss="fail")

    # No generation switch: the replay of the killed batch skips its purged range, so reading
    # it again finds none of the rows its append wrote.
    state = orders.state()
    assert state is None or state["generation"] == 0
    rows = [
        f
        for f in orders.facts_rows()
        if f["event"] is None and f["app_id"] == sink and f["batch_id"] == batch
    ]
    assert len(rows) == 1
    files = bronze_commits(orders.target)[(sink, batch)]
    assert counts_of_row(rows[0]) == counts_of_files(orders.target, files)


@pytest.fixture(autouse=True)
def _no_active_streams(spark: SparkSession) -> Any:
    yield
    for query in spark.streams.active:
        query.stop()


def test_spark_reads_the_same_rows_of_a_commit_as_deltalake(
    spark: SparkSession, tmp_path: Path
) -> None:
    """The Spark reading (for a table out of deltalake's reach) of one commit's rows agrees
    with the in-process one, and neither sees the commits around it."""
    from mssql_cdc.tables import commit_frame, read_commit_rows, table_ref

    target = str(tmp_path / "bronze")
    columns = ["_start_lsn", "_operation"]
    for n, ops in enumerate([[2, 2], [3, 4, 1], [2]]):
        rows = [(f"0x{n:020X}", op) for op in ops]
        spark.createDataFrame(rows, "_start_lsn STRING, _operation INT").write.format("delta").mode(
            "append"
        ).save(target)
    ref = table_ref(target)
    in_process = sorted(
        tuple(r.values()) for r in read_commit_rows(ref, 1, columns=columns).to_pylist()
    )
    on_spark = sorted(tuple(r) for r in commit_frame(spark, ref, 1).select(*columns).collect())
    assert in_process == on_spark == [(f"0x{1:020X}", op) for op in (1, 3, 4)]
