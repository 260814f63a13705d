"""A stream across a table rename and a nullability change (decisions 1260 and 1261): the
stream is configured by capture instance, which a rename keeps."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql.streaming.datasource import ReadAllAvailable

from mssql_cdc.source.planner import CdcStreamReader
from tests.unit.source.test_source_planner import reader_for, rows_of
from tests.unit.support.emulator_oracle import at, orders


def test_a_stream_reads_on_across_a_rename_of_its_table(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    emu = orders(path)
    emu.commit([("insert", "dbo.orders", {"order_id": 1})], at=at(1))
    reader: CdcStreamReader = reader_for(path)
    start = reader.initialOffset()
    first = reader.latestOffset(start, ReadAllAvailable())
    emu.rename_table("dbo.orders", "purchases")
    emu.commit([("insert", "dbo.purchases", {"order_id": 2})], at=at(2))
    second = reader.latestOffset(first, ReadAllAvailable())
    assert [r["order_id"] for r in rows_of(reader, start, first)] == [1]
    assert [r["order_id"] for r in rows_of(reader, first, second)] == [2]


def test_a_nullability_change_inside_a_batch_is_an_event_and_the_rows_still_read(
    tmp_path: Path,
) -> None:
    path = tmp_path / "e.db"
    emu = orders(path)
    emu.commit([("insert", "dbo.orders", {"order_id": 1, "status": "new"})], at=at(1))
    metrics = tmp_path / "metrics"
    reader = reader_for(path, metricsPath=str(metrics))
    start = reader.initialOffset()
    ddl = emu.alter_column("dbo.orders", "status", "nvarchar(20) NOT NULL", at=at(2))
    emu.commit([("insert", "dbo.orders", {"order_id": 2, "status": "paid"})], at=at(3))
    end = reader.latestOffset(start, ReadAllAvailable())
    assert [(r["order_id"], r["status"]) for r in rows_of(reader, start, end)] == [
        (1, "new"),
        (2, "paid"),
    ]
    events = [p.name for p in metrics.iterdir() if p.name.startswith("event-")]
    assert events == [f"event-schema_change-dbo_orders-{ddl}.json"]
