"""The `mssql_cdc` stream from an emulator whose server runs in a zone with a fall-back:
`_commit_ts`, the batch offsets' commit times (finalized_until's input) and the retention
watermark reach Spark in UTC, never going backwards in LSN order (decision 1320).

Oracle (plain Python): the UTC instants the test set the server's clock to. The server stores
them as local times; SQL Server's AT TIME ZONE gives the earlier instant of a repeated local time
(https://learn.microsoft.com/sql/t-sql/queries/at-time-zone-transact-sql), which would put the
second occurrence an hour early; the library recovers the true instant from LSN order.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from mssql_cdc import register
from mssql_cdc.core.batch_files import read_batch_files
from tests.spark.support.backends import BACKENDS, Backend, backend_options
from tests.support import emulator_profile
from tests.support.new_york_time import ZONE, at_time_zone_utc

STORIES: dict[str, tuple[str, list[datetime], int]] = {
    # zone: (the clock's start, the commits' true UTC instants, the cleanup's retention minutes)
    # 06:00Z: 02:00 EDT -> 01:00 EST. The cleanup's local cut, 02:30 - 90 min = 01:00, keeps
    # every commit from 00:40 EDT on (the mark is that commit).
    ZONE: (
        "2026-11-01T04:00:00",
        [
            datetime(2026, 11, 1, h, m)
            for h, m in [(4, 40), (5, 10), (5, 50), (6, 20), (6, 40), (7, 30)]
        ],
        90,
    ),
    # 01:00Z: 02:00 BST -> 01:00 GMT; the cut (the newest stored local time, 01:50 BST, less
    # 60 min: 00:50) keeps every commit.
    "Europe/London": (
        "2026-10-24T23:30:00",
        [datetime(2026, 10, 24, 23, 40)]
        + [datetime(2026, 10, 25, h, m) for h, m in [(0, 10), (0, 50), (1, 5), (1, 40)]],
        60,
    ),
    # 15:00Z: 02:00 +11:00 -> 01:30 +10:30; the cut 02:10 - 60 min = 01:10 keeps every commit.
    "Australia/Lord_Howe": (
        "2026-04-04T14:00:00",
        [
            datetime(2026, 4, 4, h, m)
            for h, m in [(14, 5), (14, 35), (14, 55), (15, 5), (15, 25), (15, 40)]
        ],
        60,
    ),
}
CASES = [(ZONE, b) for b in BACKENDS] + [
    ("Europe/London", "pymssql"),
    ("Australia/Lord_Howe", "mssql-python"),
]


@pytest.mark.parametrize(("zone", "backend"), CASES)
def test_commit_times_never_go_backwards_across_a_fall_back_and_arrive_in_utc(
    spark: SparkSession, tmp_path: Path, zone: str, backend: Backend
) -> None:
    start, commits, retention = STORIES[zone]
    assert [at_time_zone_utc(t, zone) for t in commits] != commits  # a repeated local time
    path, metrics, ckpt = tmp_path / "e.db", tmp_path / "metrics", tmp_path / "ckpt"
    # Pinned: the cleanup mark must fall on the first commit, and the realistic capture job's
    # idle entries between these commits would take it.
    emu = emulator_profile.create(path, pinned="immediate", start=start)
    emu.configure(time_zone=zone)
    emu.create_table("dbo.orders", {"order_id": "int"}, primary_key="order_id")
    emu.enable_cdc("dbo.orders")
    for i, t in enumerate(commits):
        emu.commit([("insert", "dbo.orders", {"order_id": i})], at=t)
    emu.run_cleanup_job(retention_minutes=retention)
    register(spark)
    rows: list[dict[str, Any]] = []

    def collect(df: DataFrame, batch_id: int) -> None:
        rows.extend({**r.asDict(), "batch": batch_id} for r in df.collect())

    query = (
        spark.readStream.format("mssql_cdc")
        .options(captureInstance="dbo_orders", maxCommitsPerBatch="2")
        .options(**backend_options(path, backend))
        .option("metricsPath", str(metrics))
        .load()
        .writeStream.foreachBatch(collect)
        .option("checkpointLocation", str(ckpt))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(300)
    in_lsn_order = sorted(rows, key=lambda r: r["_start_lsn"])
    times = [r["_commit_ts"] for r in in_lsn_order]
    assert [r["order_id"] for r in in_lsn_order] == list(range(len(commits)))
    assert times == commits
    assert times == sorted(times)  # non-decreasing in LSN order across the fall-back
    # Each batch's end offset holds the commit time finalized_until is cut from: never before a
    # row of its batch, never after a row of a later batch.
    ends: dict[int, datetime] = {}
    for n in sorted(int(p.name) for p in (ckpt / "offsets").iterdir() if p.name.isdigit()):
        source = json.loads((ckpt / "offsets" / str(n)).read_text().splitlines()[2])
        ends[n] = datetime.fromisoformat(source["commit_ts"])
    for row in rows:
        assert row["_commit_ts"] <= ends[row["batch"]]
        assert all(row["_commit_ts"] > end for b, end in ends.items() if b < row["batch"])
    found = read_batch_files(metrics)
    assert found.unreadable == ()
    watermarks = {r.get("retention_watermark_ts") for r in found.ranges if r.get("last")}
    assert watermarks == {commits[0].isoformat(timespec="milliseconds")}
