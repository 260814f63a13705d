"""The gap's delete rows of the source's own re-snapshot (options snapshotMode=when_needed and
gapDeletesFrom), through Spark's real streaming engine against the emulator served over TDS.

The sink is the test's own `foreachBatch`: it appends each batch to a Delta table (what the
stream delivered, which gapDeletesFrom names) and MERGEs it into a target: per key the last row
in (`_start_lsn`, `_seqval`, `_operation`) order; a delete removes the key, any other row but an
update before-image sets it. The oracle is the source table read by a plain `SELECT` through
pymssql, not the library.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pymssql
from pyspark.sql import DataFrame, SparkSession

from mssql_cdc import delta_sink, register
from mssql_cdc.emulator import Emulator
from tests.spark.support.backends import backend_options, server_of
from tests.spark.support.stream_snapshot_support import at_second, merged, orders
from tests.support import emulator_profile


def merge_into(target: Path, delivered: Path) -> Any:
    """The test's foreachBatch: append to `delivered`, then MERGE into `target`."""

    def sink(df: DataFrame, batch_id: int) -> None:
        spark = df.sparkSession
        df.write.format("delta").mode("append").save(str(delivered))
        df.createOrReplaceTempView("batch_rows")
        spark.sql(
            """
            SELECT order_id, status, _operation FROM (
              SELECT *, row_number() OVER (PARTITION BY order_id ORDER BY _start_lsn DESC,
                coalesce(_seqval, '') DESC, _operation DESC) AS n
              FROM batch_rows WHERE _operation != 3) WHERE n = 1
            """
        ).createOrReplaceTempView("last_rows")
        if not (target / "_delta_log").exists():
            spark.sql(f"CREATE TABLE delta.`{target}` (order_id INT, status STRING) USING delta")
        spark.sql(
            f"""
            MERGE INTO delta.`{target}` t USING last_rows s ON t.order_id = s.order_id
            WHEN MATCHED AND s._operation = 1 THEN DELETE
            WHEN MATCHED THEN UPDATE SET t.status = s.status
            WHEN NOT MATCHED AND s._operation != 1 THEN
              INSERT (order_id, status) VALUES (s.order_id, s.status)
            """
        )

    return sink


def run(spark: SparkSession, path: Path, tmp: Path, **options: str) -> None:
    register(spark)
    query = (
        spark.readStream.format("mssql_cdc")
        .options(captureInstance="dbo_orders", **backend_options(path, "pymssql"))
        .options(snapshotMode="when_needed", maxCommitsPerBatch="3", **options)
        .load()
        .writeStream.foreachBatch(merge_into(tmp / "target", tmp / "delivered"))
        .option("checkpointLocation", str(tmp / "ckpt"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(300)


def source_rows(path: Path) -> dict[int, str]:
    """dbo.orders by a plain query through pymssql."""
    server = server_of(path)
    conn = pymssql.connect(**server.connect_kwargs("pymssql"), login_timeout=10, timeout=10)
    try:
        cursor = conn.cursor()
        cursor.execute("SELECT order_id, status FROM dbo.orders")
        return {int(k): str(v) for k, v in cursor.fetchall()}
    finally:
        conn.close()


def target_rows(spark: SparkSession, tmp: Path) -> dict[int, str]:
    rows = spark.read.format("delta").load(str(tmp / "target")).collect()
    return {int(r["order_id"]): str(r["status"]) for r in rows}


def lose_everything_unread(emu: Emulator, when: str) -> None:
    """An idle entry days later, then the cleanup job: every change before it is purged."""
    emu.idle(at=when)
    emulator_profile.wait_for_capture(emu, when)
    emu.run_cleanup_job()


def test_keys_deleted_during_a_gap_arrive_as_deletes_so_a_merge_target_equals_the_source(
    spark: SparkSession, tmp_path: Path
) -> None:
    path = tmp_path / "e.db"
    emu = orders(path, 7)
    delivered = str(tmp_path / "delivered")
    run(spark, path, tmp_path, gapDeletesFrom=delivered)
    assert target_rows(spark, tmp_path) == source_rows(path)
    # a change the stream reads, then a gap: deletes, an update and an insert it never reads
    emu.commit([("update", "dbo.orders", {"order_id": 6, "status": "seen"})], at=at_second(30))
    emulator_profile.wait_for_capture(emu, at_second(30))
    run(spark, path, tmp_path, gapDeletesFrom=delivered)
    emu.commit([("delete", "dbo.orders", {"order_id": 1})], at=at_second(40))
    emu.commit([("delete", "dbo.orders", {"order_id": 5})], at=at_second(41))
    emu.commit([("delete", "dbo.orders", {"order_id": 6})], at=at_second(42))
    emu.commit([("update", "dbo.orders", {"order_id": 2, "status": "paid"})], at=at_second(43))
    emu.commit([("insert", "dbo.orders", {"order_id": 9, "status": "new"})], at=at_second(44))
    lose_everything_unread(emu, "2026-10-03T00:00:00")
    run(spark, path, tmp_path, gapDeletesFrom=delivered)
    expected = {0: "new", 2: "paid", 3: "new", 4: "new", 9: "new"}
    assert source_rows(path) == expected
    assert target_rows(spark, tmp_path) == expected
    rows = spark.read.format("delta").load(delivered).where("_operation = 1").collect()
    assert sorted(r["order_id"] for r in rows) == [1, 5, 6]
    stamps = {r["_snapshot"] for r in rows}
    assert len(stamps) == 1
    assert {r["_start_lsn"] for r in rows} == stamps
    assert all(r["status"] is None for r in rows)  # the key only

    # a change after the re-snapshot streams as usual, and the target keeps up
    emu.commit([("delete", "dbo.orders", {"order_id": 0})], at="2026-10-03T00:01:00")
    emulator_profile.wait_for_capture(emu, "2026-10-03T00:01:00")
    run(spark, path, tmp_path, gapDeletesFrom=delivered)
    assert (
        target_rows(spark, tmp_path) == source_rows(path) == {k: expected[k] for k in (2, 3, 4, 9)}
    )


def test_delta_sink_writes_a_when_needed_stream_with_its_gap_deletes_into_bronze(
    spark: SparkSession, tmp_path: Path
) -> None:
    """The library's own sink keeps the source's `_snapshot` (decision 1427), and
    gapDeletesFrom names its bronze: bronze read as a change feed ends equal to the source."""
    path = tmp_path / "e.db"
    emu = orders(path, 5)
    bronze, facts = str(tmp_path / "bronze"), str(tmp_path / "facts")

    def run_into_bronze() -> None:
        register(spark)
        query = (
            spark.readStream.format("mssql_cdc")
            .options(captureInstance="dbo_orders", **backend_options(path, "pymssql"))
            .options(snapshotMode="when_needed", maxCommitsPerBatch="2", gapDeletesFrom=bronze)
            .load()
            .writeStream.foreachBatch(delta_sink(bronze, "orders", facts))
            .option("checkpointLocation", str(tmp_path / "ckpt"))
            .trigger(availableNow=True)
            .start()
        )
        assert query.awaitTermination(300)

    run_into_bronze()
    emu.commit([("delete", "dbo.orders", {"order_id": 3})], at=at_second(40))
    emu.commit([("insert", "dbo.orders", {"order_id": 8, "status": "new"})], at=at_second(41))
    lose_everything_unread(emu, "2026-10-03T00:00:00")
    run_into_bronze()
    rows = [r.asDict() for r in spark.read.format("delta").load(bronze).collect()]
    assert all(r["_batch_id"] is not None for r in rows)
    stamps = sorted({r["_snapshot"] for r in rows if r["_operation"] == 0})
    assert len(stamps) == 2  # the first snapshot and the re-snapshot, as the source stamped them
    deletes = [(r["order_id"], r["_snapshot"]) for r in rows if r["_operation"] == 1]
    assert deletes == [(3, stamps[1])]
    assert merged(rows) == source_rows(path) == {0: "new", 1: "new", 2: "new", 4: "new", 8: "new"}
