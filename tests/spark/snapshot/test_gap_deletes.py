"""Deletes across a gap (issue 20 item 3): with to_delta(..., gap_deletes=True), a completed
re-snapshot leaves a derived delete row for each key bronze held that the table lost during
the gap, so bronze read as a change feed equals the source without a rebuild.

The oracle replays bronze as a change feed in plain Python: every row in apply order, a
snapshot row upserting its key, a delete removing it, never restarting from a snapshot.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from mssql_cdc.testing import InjectedFault, failpoints
from tests.spark.support.chunked_support import backfill
from tests.spark.support.recovery_support import Orders, feed


def derived(orders: Orders) -> list[dict[str, Any]]:
    return [r for r in orders.bronze() if r["_operation"] == 1 and r["_snapshot"] is not None]


def test_a_key_deleted_during_the_gap_gets_one_derived_delete_and_without_the_option_none(
    spark: SparkSession, tmp_path: Path
) -> None:
    orders = Orders(spark, tmp_path, app_id="gap-v1")
    orders.orders(4)  # keys 0..3, 'new'
    orders.run(gap_deletes=True)  # the bootstrap: no gap, so nothing derived
    assert derived(orders) == []
    orders.commit(("delete", 1, None))  # the gap: changes the stream never reads
    orders.commit(("update", 2, "paid"))
    orders.commit(("delete", 3, None), ("insert", 3, "back"))  # gone and back: in the snapshot
    orders.cleanup_past_everything()
    with failpoints({"snapshot.after_gap_deletes": "raise"}), pytest.raises(InjectedFault):
        orders.run(gap_deletes=True)
    assert [r["order_id"] for r in derived(orders)] == [1]
    assert orders.events("resnapshot") == []  # the crash came before the completion row
    orders.run(gap_deletes=True)  # the rerun reuses the snapshot and completes it
    [event] = orders.events("resnapshot")
    s = event["max_lsn"]
    [row] = derived(orders)  # stored once, though offered twice
    assert (row["order_id"], row["status"], row["_start_lsn"], row["_snapshot"]) == (1, "new", s, s)
    assert (row["_batch_id"], row["_seqval"], row["_chunk"]) == (None, None, None)
    assert row["_commit_ts"] == event["min_commit_ts"]
    assert feed(orders.bronze()) == orders.source() == [(0, "new"), (2, "paid"), (3, "back")]
    assert orders.rebuilt() == orders.source()  # the rebuild rule passes over derived rows

    orders.commit(("delete", 0, None))  # a second gap, recovered without the option
    orders.cleanup_past_everything()
    orders.run(resnapshot_interval_days=0)
    assert orders.state()["generation"] == 2  # type: ignore[index]
    assert [r["order_id"] for r in derived(orders)] == [1]  # nothing derived for key 0
    assert (0, "new") in feed(orders.bronze())  # so the feed still holds it
    assert orders.rebuilt() == orders.source() == [(2, "paid"), (3, "back")]


def test_a_chunked_re_snapshot_derives_its_deletes_when_backfill_completes_it(
    spark: SparkSession, tmp_path: Path
) -> None:
    orders = Orders(spark, tmp_path, app_id="gapc-v1")
    orders.orders(5)  # keys 0..4
    orders.run()
    orders.commit(("delete", 1, None))  # the gap
    orders.cleanup_past_everything()
    orders.run(gap_deletes=True, snapshot="chunked")  # opens S; the stream starts there
    [opened] = [o for o in orders.events("snapshot_open") if o["generation"] == 1]
    s = opened["min_lsn"]
    orders.commit(("delete", 4, None))  # after S: the stream's own delete, nothing derived
    orders.commit(("insert", 9, "late"))
    orders.run(gap_deletes=True, snapshot="chunked")
    assert derived(orders) == []  # not before the snapshot completes
    status = backfill(orders, chunk_rows=2)
    assert status["state"] == "done"
    [row] = derived(orders)
    assert (row["order_id"], row["_start_lsn"], row["_snapshot"], row["_operation"]) == (1, s, s, 1)
    [event] = orders.events("resnapshot")
    assert event["max_lsn"] == s
    assert (
        feed(orders.bronze())
        == orders.source()
        == [(0, "new"), (2, "new"), (3, "new"), (9, "late")]
    )
    assert backfill(orders)["state"] == "done"  # a rerun derives nothing again
    assert len(derived(orders)) == 1
