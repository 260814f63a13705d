"""A session that refuses to cache, as serverless compute does, and the whole recovery story
run on it: classic Spark (tests/spark/recovery/test_without_cache.py) and Spark Connect
(tests/connect/test_without_cache_on_connect.py) run the same story.

Serverless compute's limits, caching among them, are listed at
https://learn.microsoft.com/en-us/azure/databricks/compute/serverless/limitations; the
refusal here is a plain exception from the Python call, before anything reaches Spark.

The oracles are typed out here: the table's rows after each step of the story, and the
operation codes of `cdc.fn_cdc_get_all_changes_<capture_instance>`
(https://learn.microsoft.com/en-us/sql/relational-databases/system-functions/cdc-fn-cdc-get-all-changes-capture-instance-transact-sql):
1 delete, 2 insert, 3 and 4 an update's before and after images.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from mssql_cdc import apply_changes
from tests.spark.support.chunked_support import backfill
from tests.spark.support.recovery_support import Orders, feed


def derived_deletes(orders: Orders) -> list[int]:
    """The keys of bronze's derived delete rows (a delete marked with its snapshot)."""
    return sorted(
        r["order_id"]
        for r in orders.bronze()
        if r["_operation"] == 1 and r["_snapshot"] is not None
    )


def keys_in(keys: list[int], lo: Any, hi: Any) -> int:
    """How many of `keys` a chunk [lo, hi) holds (None: an open end)."""
    return sum(1 for k in keys if (lo is None or k >= lo) and (hi is None or k < hi))


def the_whole_recovery_story(spark: SparkSession, root: Path, refused: list[str]) -> None:
    """Bootstrap, a stream, a loss recovered by a full re-snapshot with gap deletes, a loss
    recovered by a chunked re-snapshot that backfill() reads in waves, then silver: every
    step on a session whose `refused` calls must stay none."""
    orders = Orders(spark, root, app_id="nocache-v1", extra={"numPartitions": "2"})
    orders.orders(4)  # keys 0..3, 'new'
    orders.run(gap_deletes=True)  # the bootstrap snapshot, then the stream
    orders.commit(("insert", 4, "new"))
    orders.commit(("update", 0, "paid"))
    orders.run(gap_deletes=True)
    stream_rows = [f for f in orders.facts_rows() if f["event"] is None]
    # an insert (2), and an update's before and after images (3 and 4)
    assert sum(f["rows"] for f in stream_rows) == 3
    assert sum(f["inserts"] for f in stream_rows) == 1
    assert sum(f["updates"] for f in stream_rows) == 1
    assert all(f["min_lsn"] is not None for f in stream_rows if f["rows"])
    [bootstrap] = orders.events("bootstrap")
    assert bootstrap["rows"] == 4

    orders.commit(("delete", 1, None))  # the first gap: the stream never reads these
    orders.commit(("update", 2, "paid"))
    orders.cleanup_past_everything()
    orders.run(gap_deletes=True)  # an automatic full re-snapshot, generation 1
    assert orders.state()["generation"] == 1  # type: ignore[index]
    [full] = orders.events("resnapshot")
    assert full["rows"] == 4  # keys 0, 2, 3 and 4
    assert derived_deletes(orders) == [1]

    orders.commit(("delete", 3, None))  # the second gap
    orders.commit(("insert", 5, "new"))
    orders.cleanup_past_everything()
    # opens generation 2's snapshot at S (a second loss within the interval needs the 0)
    orders.run(gap_deletes=True, snapshot="chunked", resnapshot_interval_days=0)
    state = orders.state()
    assert state is not None
    assert state["generation"] == 2
    s = state["snapshot_lsn"]
    orders.commit(("update", 4, "paid"))  # after S: the stream's own change
    waves = 0
    while (status := backfill(orders, chunk_rows=2, max_waves=1))["state"] != "done":
        assert status["state"] == "running"
        waves += 1
        assert waves < 10
    orders.run(gap_deletes=True, snapshot="chunked")
    assert derived_deletes(orders) == [1, 3]
    at_s = [0, 2, 4, 5]  # the table's keys at S
    chunks = [
        (json.loads(f["detail"]), f["rows"])
        for f in orders.events("snapshot_chunk")
        if json.loads(f["detail"])["snapshot"] == s
    ]
    assert chunks
    for detail, rows in chunks:
        assert rows == keys_in(at_s, detail["lo"], detail["hi"]), detail
    chunked = [e for e in orders.events("resnapshot") if e["generation"] == 2]
    assert [e["rows"] for e in chunked] == [len(at_s)]

    expected = [(0, "paid"), (2, "paid"), (4, "paid"), (5, "new")]
    assert orders.source() == expected
    assert orders.rebuilt() == expected
    assert feed(orders.bronze()) == expected  # the derived deletes keep the feed right

    silver, control = str(root / "silver"), str(root / "control")
    result = apply_changes(
        spark, orders.target, silver, keys=["order_id"], control_table=control,
        facts_table=orders.facts,
    )  # fmt: skip
    assert result["bronze_found"]
    rows = spark.read.format("delta").load(silver).collect()
    assert sorted((int(r["order_id"]), str(r["status"])) for r in rows) == expected

    # a change after silver exists: the next apply MERGEs it into silver's rows
    orders.commit(("update", 2, "sent"), ("delete", 5, None))
    orders.run(gap_deletes=True)
    apply_changes(
        spark, orders.target, silver, keys=["order_id"], control_table=control,
        facts_table=orders.facts,
    )  # fmt: skip
    expected = [(0, "paid"), (2, "sent"), (4, "paid")]
    assert orders.source() == expected
    rows = spark.read.format("delta").load(silver).collect()
    assert sorted((int(r["order_id"]), str(r["status"])) for r in rows) == expected
    assert refused == []  # nothing asked for a cache
