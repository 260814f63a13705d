"""Driver-side retries (10-source.md section 11) through Spark's real streaming engine.

The stream reads through `mssql_cdc_flaky`, whose driver connection fails on a plan (see
flaky_source.py): a transient error in any Protocol method the driver calls is retried on a new
connection and the stream ends as if healthy; a decision is raised at once, never retried; a
fourth transient error in a row is raised. The oracle is the emulator's own change rows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession

from mssql_cdc import is_data_loss
from mssql_cdc.emulator import Emulator
from tests.spark.support.flaky_source import FlakyCdcDataSource, read_plan, write_plan
from tests.support import emulator_profile

START = "2026-09-28T13:50:00"

# Every StreamPlanner and CaptureCatalog method the driver calls during a run.
DRIVER_METHODS = [
    "max_lsn",
    "min_lsn",
    "commit_time",
    "nth_commit_after",
    "split_points",
    "capture_instances",
    "captured_columns",
    "ddl_history",
    "change_table_access",
    "resolve_time_zone",
]


def six_commits(path: Path) -> Emulator:
    emu = emulator_profile.create(path, start=START)
    emu.create_table(
        "dbo.orders", {"order_id": "int", "status": "nvarchar(20)"}, primary_key="order_id"
    )
    emu.enable_cdc("dbo.orders")
    for i in range(6):
        row = {"order_id": i, "status": "new"}
        emu.commit([("insert", "dbo.orders", row)], at=f"2026-09-28T13:50:{i + 1:02d}")
    emu.add_column("dbo.orders", "note", "nvarchar(10)", at="2026-09-28T13:51:00")  # DDL
    paid = {"order_id": 0, "status": "paid"}
    emu.commit([("update", "dbo.orders", paid)], at="2026-09-28T13:52:00")
    emulator_profile.wait_for_capture(emu, "2026-09-28T13:52:00")
    return emu


def run(spark: SparkSession, tmp_path: Path, plan: Path) -> tuple[list[list[dict[str, Any]]], Any]:
    """One availableNow run of the flaky stream; the rows of each batch and the query."""
    spark.dataSource.register(FlakyCdcDataSource)
    batches: list[list[dict[str, Any]]] = []

    def collect(df: DataFrame, batch_id: int) -> None:
        batches.append([r.asDict() for r in df.collect()])

    query = (
        spark.readStream.format("mssql_cdc_flaky")
        .options(captureInstance="dbo_orders", backend="emulator")
        .options(emulatorPath=str(tmp_path / "e.db"), faultPlan=str(plan))
        .options(maxCommitsPerBatch="3", numPartitions="2")
        .load()
        .writeStream.foreachBatch(collect)
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(availableNow=True)
        .start()
    )
    return batches, query


def change_keys(emu: Emulator) -> list[tuple[object, object, object]]:
    return sorted(
        (r["__$start_lsn"], r["__$seqval"], r["__$operation"])
        for r in emu.change_rows("dbo_orders")
    )


@pytest.mark.parametrize("method", DRIVER_METHODS)
def test_a_transient_error_in_a_driver_call_is_retried_and_the_stream_ends_as_if_healthy(
    spark: SparkSession, tmp_path: Path, method: str
) -> None:
    emu = six_commits(tmp_path / "e.db")
    plan = tmp_path / "plan.json"
    write_plan(plan, {method: ["busy"]})
    batches, query = run(spark, tmp_path, plan)
    assert query.awaitTermination(300)
    assert query.exception() is None
    after = read_plan(plan)
    assert after["fail"][method] == []  # the fault fired ...
    assert after["calls"][method] >= 2  # ... and the call ran again
    got = sorted((r["_start_lsn"], r["_seqval"], r["_operation"]) for b in batches for r in b)
    assert got == change_keys(emu)  # every change once, as without the fault
    # maxCommitsPerBatch=3 over 7 commits and one DDL entry: no batch holds more than 3 commits
    assert all(len({r["_start_lsn"] for r in b}) <= 3 for b in batches)


def test_a_decision_is_raised_at_once_and_never_retried(
    spark: SparkSession, tmp_path: Path
) -> None:
    six_commits(tmp_path / "e.db")
    plan = tmp_path / "plan.json"
    write_plan(plan, {"split_points": ["data_loss", "busy"]})
    batches, query = run(spark, tmp_path, plan)
    with pytest.raises(StreamingQueryException) as caught:
        query.awaitTermination(300)
    assert is_data_loss(caught.value)
    assert "split_points found the changes purged" in str(caught.value)
    after = read_plan(plan)
    assert after["calls"]["split_points"] == 1  # no second call: a decision is not retried
    assert after["fail"]["split_points"] == ["busy"]
    assert batches == []


def test_a_fourth_transient_error_in_a_row_is_raised_unchanged(
    spark: SparkSession, tmp_path: Path
) -> None:
    six_commits(tmp_path / "e.db")
    plan = tmp_path / "plan.json"
    write_plan(plan, {"nth_commit_after": ["busy"] * 5})
    batches, query = run(spark, tmp_path, plan)
    with pytest.raises(StreamingQueryException) as caught:
        query.awaitTermination(300)
    assert "BusyError" in str(caught.value)
    assert "nth_commit_after: the emulator file is locked" in str(caught.value)
    after = read_plan(plan)
    assert after["calls"]["nth_commit_after"] == 4  # the first try and three retries
    assert after["fail"]["nth_commit_after"] == ["busy"]
    assert batches == []
