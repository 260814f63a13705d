"""The `mssql_cdc` stream from an emulator whose server runs in America/New_York: `_commit_ts` and
the retention watermark reach Spark in UTC. Oracle: zoneinfo in plain Python (the earliest UTC
instant of each stored local time, so the hour fall-back repeats comes out an hour early, as
SQL Server's AT TIME ZONE gives it too).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from mssql_cdc import register
from mssql_cdc.core.batch_files import read_batch_files
from tests.support import emulator_profile
from tests.support.new_york_time import ZONE, expected_utc

COMMITS = [  # around 2026-11-01 06:00 UTC, when 02:00 EDT falls back to 01:00 EST
    datetime(2026, 11, 1, 4, 40),
    datetime(2026, 11, 1, 5, 10),
    datetime(2026, 11, 1, 5, 50),
    datetime(2026, 11, 1, 6, 20),
    datetime(2026, 11, 1, 6, 40),
    datetime(2026, 11, 1, 7, 30),
]


def test_commit_ts_and_the_retention_watermark_arrive_in_utc_from_a_new_york_server(
    spark: SparkSession, tmp_path: Path
) -> None:
    path, metrics = tmp_path / "e.db", tmp_path / "metrics"
    # Pinned: the cleanup mark must fall on the 06:20 commit, and the realistic capture job's
    # idle entries between these half-hourly commits would take it.
    emu = emulator_profile.create(path, pinned="immediate", start="2026-11-01T04:00:00")
    emu.configure(time_zone=ZONE)
    emu.create_table("dbo.orders", {"order_id": "int"}, primary_key="order_id")
    emu.enable_cdc("dbo.orders")
    for i, t in enumerate(COMMITS):
        emu.commit([("insert", "dbo.orders", {"order_id": i})], at=t)
    emu.run_cleanup_job(retention_minutes=60)  # local cut 01:30: the mark is 06:20 UTC's commit
    register(spark)
    rows: list[dict[str, Any]] = []

    def collect(df: DataFrame, batch_id: int) -> None:
        rows.extend(r.asDict() for r in df.collect())

    query = (
        spark.readStream.format("mssql_cdc")
        .options(captureInstance="dbo_orders", backend="emulator", emulatorPath=str(path))
        .option("metricsPath", str(metrics))
        .load()
        .writeStream.foreachBatch(collect)
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(300)
    got = sorted((r["order_id"], r["_commit_ts"]) for r in rows)
    assert got == [(i, expected_utc(t)) for i, t in enumerate(COMMITS) if i >= 3]
    assert got[0][1] == datetime(2026, 11, 1, 5, 20)  # 01:20 EST read back as 01:20 EDT
    found = read_batch_files(metrics)
    assert found.unreadable == ()
    ranges = found.ranges
    watermarks = {r.get("retention_watermark_ts") for r in ranges if r.get("last")}
    assert watermarks == {expected_utc(COMMITS[3]).isoformat(timespec="milliseconds")}
