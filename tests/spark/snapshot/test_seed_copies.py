"""`seed()` from a DataFrame, at a commit time, from a copy lacking a nullable column, and over a
bronze that holds rows (`reseed`), on the emulator and with caching refused as on serverless.

The oracle is the rows the test committed, kept in a plain dict, and the commit times it gave
each commit. A copy taken at time T holds every change committed at or before T; SQL Server's
own mapping of a time to the newest LSN at or before it is `sys.fn_cdc_map_time_to_lsn` with
'largest less than or equal'
(https://learn.microsoft.com/en-us/sql/relational-databases/system-functions/sys-fn-cdc-map-time-to-lsn-transact-sql).
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from mssql_cdc import ConfigError, apply_changes, stream
from mssql_cdc.testing import InjectedFault, failpoints
from tests.spark.support.caching import refuse_caching
from tests.support import emulator_profile

START = "2026-09-28T13:50:00"
COLUMNS = "order_id INT, status STRING, note STRING"


class Source:
    """dbo.orders on an emulator; `rows` is what the test committed (the oracle)."""

    def __init__(self, root: Path) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.emu = emulator_profile.create(root / "e.db", start=START)
        self.emu.create_table(
            "dbo.orders",
            {"order_id": "int", "status": "nvarchar(20)", "note": "nvarchar(20)"},
            primary_key="order_id",
        )
        self.emu.enable_cdc("dbo.orders")
        self.clock = datetime(2026, 9, 28, 14, 0)
        self.rows: dict[int, dict[str, Any]] = {}

    def commit(self, *changes: tuple[str, dict[str, Any]]) -> datetime:
        self.clock += timedelta(seconds=10)
        for op, row in changes:
            if op == "delete":
                self.rows.pop(row["order_id"])
            else:
                self.rows[row["order_id"]] = {**self.rows.get(row["order_id"], {}), **row}
        self.emu.commit([(op, "dbo.orders", row) for op, row in changes], at=self.clock.isoformat())
        return self.clock

    def options(self) -> dict[str, str]:
        self.clock = emulator_profile.wait_for_capture(self.emu, self.clock)
        return {
            "captureInstance": "dbo_orders",
            "backend": "emulator",
            "emulatorPath": str(self.emu.path),
        }


def image(row: dict[str, Any]) -> tuple[Any, ...]:
    return (row["order_id"], row.get("status"), row.get("note"))


def test_a_dataframe_copy_at_a_commit_time_seeds_once_and_silver_holds_its_rows(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    refused = refuse_caching(monkeypatch)
    src = Source(tmp_path / "src")
    src.commit(("insert", {"order_id": 1, "status": "new", "note": "a"}))
    src.commit(("insert", {"order_id": 2, "status": "new", "note": None}))
    taken = src.commit(("update", {"order_id": 1, "status": "paid"}))
    at_copy = {k: dict(v) for k, v in src.rows.items()}  # the copy: the table at `taken`
    src.commit(("delete", {"order_id": 2}), ("insert", {"order_id": 3, "status": "new"}))
    cdc = stream(spark, src.options())
    bronze, facts = str(tmp_path / "bronze"), str(tmp_path / "facts")
    args = (bronze, "orders-v1", str(tmp_path / "ckpt"), facts)

    # The copy lacks the nullable `note`: refused naming it, unless allowed.
    lacking = spark.createDataFrame(
        [(r["order_id"], r["status"]) for r in at_copy.values()], "order_id INT, status STRING"
    )
    with pytest.raises(ConfigError, match="missing note"):
        cdc.seed(lacking, *args, as_of=taken + timedelta(seconds=5))
    keyless = spark.createDataFrame([("paid", "a")], "status STRING, note STRING")
    with pytest.raises(ConfigError, match="missing order_id"):
        cdc.seed(keyless, *args, as_of=taken, allow_missing_columns=True)
    assert not Path(bronze).exists()

    # A crash after the rows reached bronze: the rerun (another DataFrame of the same copy)
    # finishes the same seed without appending again.
    with failpoints({"snapshot.after_append": "raise"}), pytest.raises(InjectedFault):
        cdc.seed(lacking, *args, as_of=taken + timedelta(seconds=5), allow_missing_columns=True)
    again = lacking.select("status", "order_id")  # another plan, the same rows
    offset = cdc.seed(again, *args, as_of=taken + timedelta(seconds=5), allow_missing_columns=True)
    assert offset["commit_ts"].startswith(taken.isoformat())  # the newest commit at or before
    [event] = [
        r.asDict()
        for r in spark.read.format("delta").load(facts).where("event = 'bootstrap'").collect()
    ]
    assert event["max_lsn"] == offset["lsn"]
    assert json.loads(event["detail"]) == {"seeded_from": "a DataFrame"}
    rows = spark.read.format("delta").load(bronze).collect()
    assert sorted((r["order_id"], r["status"], r["note"]) for r in rows) == sorted(
        (r["order_id"], r["status"], None) for r in at_copy.values()
    )
    assert {(r["_operation"], r["_snapshot"]) for r in rows} == {(0, offset["lsn"])}

    silver, control = str(tmp_path / "silver"), str(tmp_path / "control")
    apply_changes(
        spark, bronze, silver, keys=["order_id"], control_table=control, facts_table=facts
    )
    found = spark.read.format("delta").load(silver).collect()
    assert sorted((r["order_id"], r["status"]) for r in found) == sorted(
        (r["order_id"], r["status"]) for r in at_copy.values()
    )

    # A new stream seeded over that bronze: refused unless reseed, and never below its rows.
    newer = spark.createDataFrame([image(r) for r in src.rows.values()], COLUMNS)
    later = (bronze, "orders-v2", str(tmp_path / "ckpt2"), str(tmp_path / "facts2"))
    with pytest.raises(ConfigError, match=r"holds rows already.*reseed=True"):
        cdc.seed(newer, *later, as_of=src.clock)
    with pytest.raises(ConfigError, match="below the newest row bronze holds"):
        cdc.seed(
            lacking,
            *later,
            as_of=taken - timedelta(seconds=10),
            reseed=True,
            allow_missing_columns=True,
        )
    result = cdc.seed(newer, *later, as_of=src.clock, reseed=True)
    assert result["lsn"] > offset["lsn"]
    snap = spark.read.format("delta").load(bronze).where(f"_snapshot = '{result['lsn']}'")
    assert sorted(tuple(r[c] for c in ("order_id", "status", "note")) for r in snap.collect()) == (
        sorted(image(r) for r in src.rows.values())
    )
    assert refused == []
