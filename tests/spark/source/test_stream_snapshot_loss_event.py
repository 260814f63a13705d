"""The facts row of an in-stream re-snapshot (snapshotMode=when_needed): the loss is a certain
`data_skipped` row of the re-snapshot's first batch, written by `delta_sink` from the planner's
event file in the metrics folder, once even when the batch is replayed (decision 1445).

Oracles: the LSNs the test's own commits and idle entry returned, plain Python's expected
table, and Microsoft's documentation of sys.sp_cdc_cleanup_change_table: the low water mark
passed becomes the instance's new low endpoint and change rows below it are removed
(https://learn.microsoft.com/en-us/sql/relational-databases/system-stored-procedures/sys-sp-cdc-cleanup-change-table-transact-sql).
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import SparkSession

from mssql_cdc import delta_sink, register
from mssql_cdc.testing import failpoints
from tests.spark.support.backends import backend_options
from tests.spark.support.stream_snapshot_support import at_second, merged, orders
from tests.support import emulator_profile

LOST_AT = "2026-10-03T00:00:00"


def test_a_loss_is_one_data_skipped_row_of_the_re_snapshot_s_first_batch_even_on_replay(
    spark: SparkSession, tmp_path: Path
) -> None:
    path = tmp_path / "e.db"
    emu = orders(path, 5)
    bronze, facts, metrics = (str(tmp_path / n) for n in ("bronze", "facts", "metrics"))

    def run() -> None:
        register(spark)
        query = (
            spark.readStream.format("mssql_cdc")
            .options(captureInstance="dbo_orders", **backend_options(path, "pymssql"))
            .options(snapshotMode="when_needed", maxCommitsPerBatch="2", metricsPath=metrics)
            .load()
            .writeStream.foreachBatch(delta_sink(bronze, "orders", facts, metrics_path=metrics))
            .option("checkpointLocation", str(tmp_path / "ckpt"))
            .trigger(availableNow=True)
            .start()
        )
        assert query.awaitTermination(300)

    def skipped() -> list[dict]:
        rows = spark.read.format("delta").load(facts).where("event = 'data_skipped'").collect()
        return [r.asDict() for r in rows]

    run()  # the initial snapshot, three batches
    read = emu.commit(
        [("update", "dbo.orders", {"order_id": 4, "status": "seen"})], at=at_second(30)
    )
    emulator_profile.wait_for_capture(emu, at_second(30))
    run()
    assert skipped() == []
    lost = [
        emu.commit([("delete", "dbo.orders", {"order_id": 3})], at=at_second(40)),
        emu.commit([("insert", "dbo.orders", {"order_id": 8, "status": "new"})], at=at_second(41)),
    ]
    mark = emu.idle(at=LOST_AT)
    emulator_profile.wait_for_capture(emu, LOST_AT)
    emu.cleanup("dbo_orders", mark)  # both changes above are purged before the stream reads them

    # the re-snapshot's first batch reaches bronze, then the query dies before its facts commit
    with (
        failpoints({"sink.after_target_write": "raise"}),
        pytest.raises(StreamingQueryException, match=r"sink\.after_target_write"),
    ):
        run()
    assert skipped() == []
    run()  # the restart replays the batch from the checkpoint, then reads on

    rows = [r.asDict() for r in spark.read.format("delta").load(bronze).collect()]
    assert merged(rows) == {0: "new", 1: "new", 2: "new", 4: "seen", 8: "new"}
    stamps = sorted({r["_snapshot"] for r in rows if r["_operation"] == 0})
    assert len(stamps) == 2  # the initial snapshot and the re-snapshot
    stamp = stamps[1]
    assert stamp >= mark
    first_batch = min(r["_batch_id"] for r in rows if r["_snapshot"] == stamp)

    (row,) = skipped()
    detail = json.loads(row["detail"])
    assert row["batch_id"] == first_batch
    assert detail["resnapshot_lsn"] == stamp
    assert detail["snapshot_mode"] == "when_needed"
    assert detail["certain"] is True
    assert read < detail["from"] <= lost[0]  # the first LSN after the last change read
    assert row["min_lsn"] == detail["from"]
    assert detail["to"] == mark  # the low water mark the test passed
    assert (
        datetime(2026, 9, 28, 14, 0, 30) <= row["lost_from_ts"] < datetime(2026, 9, 28, 14, 0, 40)
    )
    assert row["lost_to_ts"] == datetime(2026, 10, 3)
