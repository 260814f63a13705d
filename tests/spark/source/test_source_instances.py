"""Capture instances that change under a running query (10-source.md 8.3 and 8.5), through
Spark's real streaming engine against the emulator.

Each test keeps one query running (a processing-time trigger) and changes the emulator between
`processAllAvailable()` calls, so the change happens inside one run, after the query's schema
was inferred. The oracle is the emulator's own rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from mssql_cdc import is_data_loss, register
from mssql_cdc.emulator import Emulator
from tests.support import emulator_profile

START = "2026-09-28T13:50:00"


class Live:
    """One running query of `mssql_cdc` collecting every batch's rows."""

    def __init__(self, spark: SparkSession, tmp_path: Path, instance: str, **options: str):
        register(spark)
        self.batches: list[list[dict[str, Any]]] = []
        self.query: StreamingQuery = (
            spark.readStream.format("mssql_cdc")
            .options(captureInstance=instance, backend="emulator")
            .options(emulatorPath=str(tmp_path / "e.db"), **options)
            .load()
            .writeStream.foreachBatch(self._collect)
            .option("checkpointLocation", str(tmp_path / "ckpt"))
            .trigger(processingTime="200 milliseconds")
            .start()
        )

    def _collect(self, df: DataFrame, batch_id: int) -> None:
        self.batches.append([r.asDict() for r in df.collect()])

    def rows(self) -> list[dict[str, Any]]:
        return [r for b in self.batches for r in b]


@pytest.fixture
def live(spark: SparkSession) -> Iterator[list[Live]]:
    started: list[Live] = []
    yield started
    for one in started:
        one.query.stop()


class Clock:
    def __init__(self) -> None:
        self.second = 0

    def __call__(self) -> str:
        self.second += 1
        m, s = divmod(self.second, 60)
        return f"2026-09-28T14:{m:02d}:{s:02d}"

    def captured(self, emu: Emulator) -> None:
        """On the realistic profile, waits for the capture job to pass every commit so far
        and moves this clock past the wait; a no-op on immediate."""
        m, s = divmod(self.second, 60)
        done = emulator_profile.wait_for_capture(emu, f"2026-09-28T14:{m:02d}:{s:02d}")
        self.second = max(self.second, (done.hour - 14) * 3600 + done.minute * 60 + done.second)


def insert(emu: Emulator, at: Clock, *rows: dict[str, object]) -> str:
    return emu.commit([("insert", "dbo.orders", r) for r in rows], at=at())


def table_with_qty(path: Path, at: Clock) -> Emulator:
    emu = emulator_profile.create(path, start=START)
    emu.create_table(
        "dbo.orders",
        {"order_id": "int", "status": "nvarchar(20)", "qty": "int"},
        primary_key="order_id",
    )
    emu.enable_cdc("dbo.orders")
    insert(emu, at, {"order_id": 1, "status": "new", "qty": 7})
    at.captured(emu)
    return emu


def retype_qty_in_a_new_instance(emu: Emulator, at: Clock, sql_type: str, qty: int) -> str:
    """qty dropped and added again with `sql_type`, then a second instance that captures the
    new column: the one way SQL Server changes a type across families. Returns its S."""
    emu.drop_column("dbo.orders", "qty", at=at())
    emu.add_column("dbo.orders", "qty", sql_type, at=at())
    emu.enable_cdc("dbo.orders", capture_instance="dbo_orders_v2")
    insert(emu, at, {"order_id": 2, "status": "new", "qty": qty})
    at.captured(emu)
    return emu.min_lsn("dbo_orders_v2")


def reading_qty_as_int(
    spark: SparkSession, tmp_path: Path, live: list[Live]
) -> tuple[Emulator, Clock, Path, Live]:
    """A running query that has read the first row; its schema holds qty as INT."""
    at = Clock()
    emu = table_with_qty(tmp_path / "e.db", at)
    metrics = tmp_path / "metrics"
    stream = Live(spark, tmp_path, "dbo_orders", metricsPath=str(metrics))
    live.append(stream)
    stream.query.processAllAvailable()
    assert [r["qty"] for r in stream.rows()] == [7]
    return emu, at, metrics, stream


def test_a_newer_instance_with_a_type_the_schema_cannot_hold_stops_before_reading(
    spark: SparkSession, tmp_path: Path, live: list[Live]
) -> None:
    emu, at, metrics, stream = reading_qty_as_int(spark, tmp_path, live)
    retype_qty_in_a_new_instance(emu, at, "bigint", 5_000_000_000)
    with pytest.raises(StreamingQueryException) as caught:
        stream.query.processAllAvailable()
    text = str(caught.value)
    assert "SchemaChangedError" in text
    assert "capture instance 'dbo_orders_v2'" in text
    assert "column 'qty' as bigint (Spark BIGINT)" in text
    assert "declared type INT cannot hold" in text
    assert "restart the query so the schema is inferred again" in text
    assert [r["qty"] for r in stream.rows()] == [7]  # nothing of the batch was read
    assert not list(metrics.glob("event-capture_instance_switched-*"))


def test_a_newer_instance_with_a_type_the_schema_holds_switches_in_place(
    spark: SparkSession, tmp_path: Path, live: list[Live]
) -> None:
    emu, at, metrics, stream = reading_qty_as_int(spark, tmp_path, live)
    s = retype_qty_in_a_new_instance(emu, at, "smallint", 300)  # SMALLINT widens to INT
    stream.query.processAllAvailable()
    got = sorted((r["order_id"], r["qty"], r["_capture_instance"]) for r in stream.rows())
    assert got == [(1, 7, "dbo_orders"), (2, 300, "dbo_orders_v2")]
    assert [p.name for p in metrics.glob("event-capture_instance_switched-*")] == [
        f"event-capture_instance_switched-dbo_orders_v2-{s}.json"
    ]


def reading_custom_named(
    spark: SparkSession, tmp_path: Path, live: list[Live]
) -> tuple[Emulator, Clock, Live]:
    """orders captured by `orders_custom`, and a running query that has read its 3 rows."""
    at = Clock()
    emu = emulator_profile.create(tmp_path / "e.db", start=START)
    emu.create_table(
        "dbo.orders", {"order_id": "int", "status": "nvarchar(20)"}, primary_key="order_id"
    )
    emu.enable_cdc("dbo.orders", capture_instance="orders_custom")
    for i in range(3):
        insert(emu, at, {"order_id": i, "status": "new"})
    at.captured(emu)
    stream = Live(spark, tmp_path, "orders_custom")
    live.append(stream)
    stream.query.processAllAvailable()
    return emu, at, stream


def test_a_custom_named_instance_disabled_mid_run_is_followed_and_a_new_run_asks_for_the_name(
    spark: SparkSession, tmp_path: Path, live: list[Live]
) -> None:
    emu, at, stream = reading_custom_named(spark, tmp_path, live)
    emu.enable_cdc("dbo.orders", capture_instance="orders_v2")
    insert(emu, at, {"order_id": 3, "status": "new"})
    at.captured(emu)
    stream.query.processAllAvailable()  # the stream passed S
    emu.disable_cdc("orders_custom")
    insert(emu, at, {"order_id": 4, "status": "new"}, {"order_id": 5, "status": "new"})
    at.captured(emu)
    stream.query.processAllAvailable()
    got = sorted((r["order_id"], r["_capture_instance"]) for r in stream.rows())
    assert got == [
        (0, "orders_custom"),
        (1, "orders_custom"),
        (2, "orders_custom"),
        (3, "orders_v2"),
        (4, "orders_v2"),
        (5, "orders_v2"),
    ]
    assert sorted(r["order_id"] for r in emu.rows("dbo.orders")) == [0, 1, 2, 3, 4, 5]
    stream.query.stop()

    # A new run does not know the table of a vanished custom name: it asks for the name.
    with pytest.raises(Exception) as caught:  # noqa: PT011 - Spark wraps the planning error
        Live(spark, tmp_path, "orders_custom")
    text = str(caught.value)
    assert "capture instance 'orders_custom' does not exist" in text
    assert "orders_v2" in text  # the instances found, the remaining one among them
    assert "set captureInstance to the table's remaining instance" in text


def test_a_custom_named_instance_disabled_before_the_stream_passed_s_is_a_loss_naming_it(
    spark: SparkSession, tmp_path: Path, live: list[Live]
) -> None:
    emu, at, stream = reading_custom_named(spark, tmp_path, live)
    insert(emu, at, {"order_id": 3, "status": "new"})  # held only by orders_custom
    emu.enable_cdc("dbo.orders", capture_instance="orders_v2")
    insert(emu, at, {"order_id": 4, "status": "new"})
    at.captured(emu)  # orders_custom holds order 3 before it is disabled
    emu.disable_cdc("orders_custom")
    with pytest.raises(StreamingQueryException) as caught:
        stream.query.processAllAvailable()
    assert is_data_loss(caught.value)
    text = str(caught.value)
    assert "capture instance 'orders_v2'" in text
    assert "held only by capture instance 'orders_custom', disabled before" in text
    assert sorted(r["order_id"] for r in stream.rows()) == [0, 1, 2]
