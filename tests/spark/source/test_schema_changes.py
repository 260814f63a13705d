"""A stream started from another pipeline's copy (`seed()`), and a captured table's schema changed
by SQL Server's standard procedure (a new capture instance, the switch, the old one disabled),
through `to_delta`, the facts and `apply_changes` on the emulator.

The oracle is the emulator's own table: silver must hold exactly its rows after every step;
bronze's schema and the facts rows are read as a user reads them.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from mssql_cdc import ConfigError, DataLossError, SchemaChangedError, apply_changes, stream
from mssql_cdc.testing import InjectedFault, failpoints
from tests.support import emulator_profile

START = "2026-09-28T13:50:00"


class Table:
    """dbo.orders on an emulator, streamed into path tables under `root`."""

    def __init__(self, spark: SparkSession, root: Path, columns: dict[str, str]) -> None:
        self.spark, self.root, self.clock = spark, root, datetime(2026, 9, 28, 14, 0)
        root.mkdir(parents=True, exist_ok=True)
        self.emu = emulator_profile.create(root / "e.db", start=START)
        self.emu.create_table("dbo.orders", columns, primary_key="order_id")
        self.emu.enable_cdc("dbo.orders")
        self.instance = "dbo_orders"
        self.target, self.facts = str(root / "bronze"), str(root / "facts")
        self.silver, self.control = str(root / "silver"), str(root / "control")
        self.checkpoint = str(root / "ckpt")
        self.extra: dict[str, str] = {}

    def tick(self) -> str:
        self.clock += timedelta(seconds=1)
        return self.clock.isoformat()

    def wait_for_capture(self) -> None:
        """On the realistic profile, lets the capture job pass every commit so far, as a test
        against a server waits before it reads (the clock moves on); a no-op on immediate."""
        self.clock = emulator_profile.wait_for_capture(self.emu, self.clock)

    def commit(self, *changes: tuple[str, dict[str, Any]]) -> str:
        return self.emu.commit([(op, "dbo.orders", row) for op, row in changes], at=self.tick())

    def options(self) -> dict[str, str]:
        return {
            "captureInstance": self.instance,
            "backend": "emulator",
            "emulatorPath": str(self.emu.path),
            **self.extra,
        }

    def to_delta(self, **kw: Any) -> StreamingQuery:
        self.wait_for_capture()
        args: dict[str, Any] = {"trigger": {"availableNow": True}, "bootstrap": True}
        args.update(kw)
        return stream(self.spark, self.options()).to_delta(
            self.target, "orders-v1", self.checkpoint, self.facts, **args
        )

    def run(self, **kw: Any) -> None:
        query = self.to_delta(**kw)
        assert query.awaitTermination(120)
        assert query.exception() is None

    def apply(self) -> None:
        apply_changes(
            self.spark,
            self.target,
            self.silver,
            keys=["order_id"],
            control_table=self.control,
            facts_table=self.facts,
        )

    def silver_rows(self) -> list[dict[str, Any]]:
        rows = self.spark.read.format("delta").load(self.silver).collect()
        return sorted((r.asDict() for r in rows), key=lambda r: r["order_id"])

    def source_rows(self) -> list[dict[str, Any]]:
        return sorted(self.emu.rows("dbo.orders"), key=lambda r: r["order_id"])

    def bronze_types(self) -> dict[str, str]:
        schema = self.spark.read.format("delta").load(self.target).schema
        return {f.name: f.dataType.simpleString() for f in schema.fields}

    def events(self, event: str) -> list[dict[str, Any]]:
        rows = self.spark.read.format("delta").load(self.facts).where(f"event = '{event}'")
        return [r.asDict() for r in rows.collect()]


def widen_silver_qty(t: Table) -> None:
    """What apply_changes' SchemaChangedError asks for: silver's types change only by hand."""
    with pytest.raises(SchemaChangedError, match="column qty is int in silver but bigint"):
        t.apply()
    silver = f"delta.`{t.silver}`"
    t.spark.sql(f"ALTER TABLE {silver} SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')")
    t.spark.sql(f"ALTER TABLE {silver} ALTER COLUMN qty TYPE BIGINT")


def captured(rows: list[dict[str, Any]], *columns: str) -> list[tuple[Any, ...]]:
    return [tuple(r.get(c) for c in columns) for r in rows]


def test_a_stream_seeded_from_another_pipelines_copy_streams_on_from_its_lsn(
    spark: SparkSession, tmp_path: Path
) -> None:
    t = Table(spark, tmp_path / "seeded", {"order_id": "int", "status": "nvarchar(20)"})
    for k in range(4):
        t.commit(("insert", {"order_id": k, "status": "new"}))
    t.wait_for_capture()
    taken_at = t.emu.max_lsn()
    assert taken_at is not None
    # The other pipeline's copy: the table as it was at `taken_at`, loaded into Delta.
    copy = str(tmp_path / "copy")
    spark.createDataFrame(t.source_rows(), "order_id INT, status STRING").write.format(
        "delta"
    ).save(copy)
    t.commit(("update", {"order_id": 1, "status": "paid"}), ("delete", {"order_id": 2}))
    cdc = stream(spark, t.options())
    args = (t.target, "orders-v1", t.checkpoint, t.facts)

    # Refused before anything is written: a copy that is not Delta, a copy with other columns.
    (tmp_path / "csv").mkdir()
    (tmp_path / "csv" / "part-0.csv").write_text("order_id,status\n0,new\n")
    with pytest.raises(ConfigError, match="holds no Delta table"):
        cdc.seed(str(tmp_path / "csv"), *args, at_lsn=taken_at)
    with pytest.raises(ConfigError, match="no such table"):
        cdc.seed(str(tmp_path / "nowhere"), *args, at_lsn=taken_at)
    other = str(tmp_path / "other")
    spark.createDataFrame([(0, "new", 5)], "order_id INT, status STRING, qty INT").write.format(
        "delta"
    ).save(other)
    with pytest.raises(ConfigError, match=r"missing none; not captured qty"):
        cdc.seed(other, *args, at_lsn=taken_at)
    assert not Path(t.target).exists()
    assert not Path(t.facts).exists()

    # A crash after the copy's rows reached bronze and before the bootstrap row: the rerun
    # completes the same seed, without appending the rows again.
    with failpoints({"snapshot.after_append": "raise"}), pytest.raises(InjectedFault):
        cdc.seed(copy, *args, at_lsn=taken_at)
    assert spark.read.format("delta").load(t.target).count() == 4
    assert not Path(t.facts).exists()  # no bootstrap row, nor any other
    offset = cdc.seed(copy, *args, at_lsn=taken_at)
    assert offset["lsn"] == taken_at
    assert cdc.seed(copy, *args, at_lsn=taken_at) == offset  # a rerun writes nothing twice
    assert spark.read.format("delta").load(t.target).count() == 4
    [event] = t.events("bootstrap")
    assert (event["app_id"], event["generation"], event["rows"]) == ("orders-v1", 0, 4)
    assert event["max_lsn"] == taken_at
    assert json.loads(event["detail"]) == {"seeded_from": copy}

    t.run()  # finds the seeded bootstrap: no snapshot of its own
    assert len(t.events("snapshot_open")) == 0
    bronze = spark.read.format("delta").load(t.target)
    assert bronze.where("_operation = 0").count() == 4
    assert bronze.where("_operation <> 0").count() == 3  # the update's two images, the delete
    t.apply()
    assert t.silver_rows()
    assert captured(t.silver_rows(), "order_id", "status") == captured(
        t.source_rows(), "order_id", "status"
    )

    # A started stream cannot be seeded again, under another LSN either.
    with pytest.raises(ConfigError, match="has started already"):
        cdc.seed(copy, *args, at_lsn=str(t.emu.max_lsn()))

    # A copy whose LSN cleanup has passed: refused naming both LSNs, nothing written.
    late = Table(spark, tmp_path / "late", {"order_id": "int", "status": "nvarchar(20)"})
    old = late.commit(("insert", {"order_id": 1, "status": "new"}))
    late.commit(("insert", {"order_id": 2, "status": "new"}))
    late.wait_for_capture()
    late.emu.cleanup("dbo_orders", str(late.emu.max_lsn()))
    with pytest.raises(DataLossError) as caught:
        stream(spark, late.options()).seed(
            copy, late.target, "late-v1", late.checkpoint, late.facts, at_lsn=old
        )
    assert old in str(caught.value)
    assert f"min_lsn {late.emu.min_lsn('dbo_orders')}" in str(caught.value)
    assert not Path(late.target).exists()


def switch(t: Table, new_instance: str) -> str:
    """The standard procedure's second step, after the DDL: a capture instance of the table's new
    shape. Its first change is the switch; the tests disable the old instance once the stream
    has read past it."""
    t.emu.enable_cdc("dbo.orders", capture_instance=new_instance)
    return new_instance


def test_a_column_added_then_dropped_then_widened_each_through_a_new_capture_instance(
    spark: SparkSession, tmp_path: Path
) -> None:
    t = Table(spark, tmp_path, {"order_id": "int", "status": "nvarchar(20)", "qty": "int"})
    t.commit(("insert", {"order_id": 1, "status": "new", "qty": 1}))
    t.run()
    t.apply()

    # 1. A column added: dbo_orders_v2 captures `note`; the next run reads through the switch.
    t.emu.add_column("dbo.orders", "note", "nvarchar(50)", at=t.tick())
    switch(t, "dbo_orders_v2")
    t.commit(("insert", {"order_id": 2, "status": "new", "qty": 2, "note": "gift"}))
    t.run()
    t.emu.disable_cdc("dbo_orders")
    t.commit(("update", {"order_id": 1, "status": "paid", "qty": 1, "note": "late"}))
    t.run()
    assert t.bronze_types()["note"] == "string"
    [switched] = t.events("capture_instance_switched")
    assert json.loads(switched["detail"]) == {
        "old": "dbo_orders",
        "new": "dbo_orders_v2",
        "uncaptured": [],
    }
    t.apply()
    assert captured(t.silver_rows(), "order_id", "status", "qty", "note") == captured(
        t.source_rows(), "order_id", "status", "qty", "note"
    )

    # 2. A column dropped: dbo_orders_v3 no longer captures `note`; bronze keeps the column,
    # later rows read NULL in it, and silver's untouched rows keep their last value.
    t.emu.drop_column("dbo.orders", "note", at=t.tick())
    switch(t, "dbo_orders_v3")
    t.commit(("insert", {"order_id": 3, "status": "new", "qty": 3}))
    t.run()
    t.emu.disable_cdc("dbo_orders_v2")
    t.run()
    assert "note" in t.bronze_types()
    dropped = [e for e in t.events("capture_instance_switched") if "v3" in e["detail"]]
    assert [json.loads(e["detail"])["uncaptured"] for e in dropped] == [["note"]]
    t.apply()
    silver = {r["order_id"]: r for r in t.silver_rows()}
    assert (silver[1]["note"], silver[2]["note"], silver[3]["note"]) == ("late", "gift", None)
    assert captured(t.silver_rows(), "order_id", "status", "qty") == captured(
        t.source_rows(), "order_id", "status", "qty"
    )

    # 3. A type widened: qty int -> bigint in dbo_orders_v4. Bronze refuses to retype qty
    # until the table allows type widening; then the rerun widens it and carries on.
    t.emu.alter_column("dbo.orders", "qty", "bigint", at=t.tick())
    switch(t, "dbo_orders_v4")
    t.commit(("insert", {"order_id": 4, "status": "new", "qty": 5_000_000_000}))
    query = t.to_delta()
    with pytest.raises(StreamingQueryException) as caught:
        query.awaitTermination(120)
    failure = str(caught.value)
    assert "SchemaChangedError" in failure
    assert "delta.enableTypeWidening" in failure
    spark.sql(
        f"ALTER TABLE delta.`{t.target}` SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')"
    )
    t.run()
    t.emu.disable_cdc("dbo_orders_v3")
    t.run()
    assert t.bronze_types()["qty"] == "bigint"
    assert len(t.events("capture_instance_switched")) == 3
    widen_silver_qty(t)
    t.apply()
    assert captured(t.silver_rows(), "order_id", "status", "qty") == captured(
        t.source_rows(), "order_id", "status", "qty"
    )


def test_snapshot_on_switch_re_snapshots_a_widened_column_into_the_next_generation(
    spark: SparkSession, tmp_path: Path
) -> None:
    t = Table(spark, tmp_path, {"order_id": "int", "status": "nvarchar(20)", "qty": "int"})
    t.extra = {"snapshotOnSwitch": "true"}
    with pytest.raises(ConfigError, match="snapshotOnSwitch needs on_data_loss='resnapshot'"):
        t.to_delta()
    for k in range(3):
        t.commit(("insert", {"order_id": k, "status": "new", "qty": k}))
    t.run(on_data_loss="resnapshot")
    t.apply()

    t.commit(("update", {"order_id": 0, "status": "paid", "qty": 0}))  # unread, before S
    t.emu.alter_column("dbo.orders", "qty", "bigint", at=t.tick())
    switch(t, "dbo_orders_v2")
    t.commit(("insert", {"order_id": 9, "status": "new", "qty": 5_000_000_000}))
    t.run(on_data_loss="resnapshot")  # no failing batch: generation 1 starts past the switch
    state = json.loads((Path(t.checkpoint) / "_mssql_cdc_generation.json").read_text())
    assert state["generation"] == 1
    [event] = t.events("resnapshot")
    assert (event["app_id"], event["generation"], event["rows"]) == ("orders-v1.g1", 1, 4)
    assert event["max_lsn"] == state["snapshot_lsn"] >= t.emu.min_lsn("dbo_orders_v2")
    assert t.bronze_types()["qty"] == "bigint"
    t.emu.disable_cdc("dbo_orders")
    t.commit(("delete", {"order_id": 1}))
    t.run(on_data_loss="resnapshot")
    widen_silver_qty(t)
    t.apply()
    assert captured(t.silver_rows(), "order_id", "status", "qty") == captured(
        t.source_rows(), "order_id", "status", "qty"
    )


def _generation(t: Table) -> int:
    state = Path(t.checkpoint) / "_mssql_cdc_generation.json"
    return int(json.loads(state.read_text())["generation"]) if state.exists() else 0


def _bronze_latest(t: Table, *columns: str) -> list[tuple[Any, ...]]:
    """Bronze's latest image per key, keys whose last change is a delete left out, in plain
    Python over bronze's rows (apply order: _start_lsn, _seqval, _operation)."""
    rows = [r.asDict() for r in t.spark.read.format("delta").load(t.target).collect()]
    newest: dict[Any, dict[str, Any]] = {}
    order = ("_start_lsn", "_seqval", "_operation")
    for r in sorted(rows, key=lambda r: tuple(str(r.get(c) or "") for c in order)):
        newest[r["order_id"]] = r
    kept = [r for r in newest.values() if r["_operation"] not in (1, 3)]
    return sorted(tuple(r.get(c) for c in columns) for r in kept)


def test_snapshot_on_switch_re_snapshots_a_column_the_older_instance_never_captured(
    spark: SparkSession, tmp_path: Path
) -> None:
    t = Table(spark, tmp_path, {"order_id": "int", "status": "nvarchar(20)"})
    t.extra = {"snapshotOnSwitch": "true"}
    expected = {k: ("new", None) for k in range(3)}
    for k in range(3):
        t.commit(("insert", {"order_id": k, "status": "new"}))
    t.run(on_data_loss="resnapshot")
    t.apply()

    # `note` is added and set on order 1 while only dbo_orders, which does not capture it,
    # exists: no change row ever holds that value.
    t.emu.add_column("dbo.orders", "note", "nvarchar(50)", at=t.tick())
    t.commit(("update", {"order_id": 1, "status": "paid", "note": "gift"}))
    expected[1] = ("paid", "gift")
    switch(t, "dbo_orders_v2")
    t.commit(("insert", {"order_id": 9, "status": "new", "note": "first"}))
    expected[9] = ("new", "first")
    t.run(on_data_loss="resnapshot")
    assert _generation(t) == 1
    [event] = t.events("resnapshot")
    assert (event["generation"], event["rows"]) == (1, 4)
    assert event["max_lsn"] >= t.emu.min_lsn("dbo_orders_v2")
    t.emu.disable_cdc("dbo_orders")
    t.commit(("update", {"order_id": 2, "status": "paid", "note": "late"}))
    expected[2] = ("paid", "late")
    t.run(on_data_loss="resnapshot")
    want = sorted((k, *v) for k, v in expected.items())
    assert _bronze_latest(t, "order_id", "status", "note") == want
    t.apply()
    assert captured(t.silver_rows(), "order_id", "status", "note") == want


def test_snapshot_on_switch_re_snapshots_when_the_newer_instance_no_longer_captures_a_column(
    spark: SparkSession, tmp_path: Path
) -> None:
    t = Table(
        spark, tmp_path, {"order_id": "int", "status": "nvarchar(20)", "note": "nvarchar(50)"}
    )
    t.extra = {"snapshotOnSwitch": "true"}
    for k in range(3):
        t.commit(("insert", {"order_id": k, "status": "new", "note": f"n{k}"}))
    t.run(on_data_loss="resnapshot")
    t.apply()

    t.emu.drop_column("dbo.orders", "note", at=t.tick())
    switch(t, "dbo_orders_v2")
    t.commit(("insert", {"order_id": 9, "status": "new"}))
    t.run(on_data_loss="resnapshot")
    assert _generation(t) == 1
    [event] = t.events("resnapshot")
    assert (event["generation"], event["rows"]) == (1, 4)
    t.emu.disable_cdc("dbo_orders")
    t.run(on_data_loss="resnapshot")
    t.apply()
    # The source holds no note any more: silver rebuilt from the snapshot holds none either,
    # where without the option keys 0 to 2 would keep n0 to n2.
    assert captured(t.silver_rows(), "order_id", "status", "note") == [
        (0, "new", None),
        (1, "new", None),
        (2, "new", None),
        (9, "new", None),
    ]


def test_snapshot_on_switch_continues_without_a_snapshot_through_a_switch_that_changes_nothing(
    spark: SparkSession, tmp_path: Path
) -> None:
    t = Table(spark, tmp_path, {"order_id": "int", "status": "nvarchar(20)"})
    t.extra = {"snapshotOnSwitch": "true"}
    for k in range(3):
        t.commit(("insert", {"order_id": k, "status": "new"}))
    t.run(on_data_loss="resnapshot")
    switch(t, "dbo_orders_v2")  # the same columns, types and key
    t.commit(("update", {"order_id": 0, "status": "paid"}))
    t.run(on_data_loss="resnapshot")
    t.emu.disable_cdc("dbo_orders")
    t.commit(("delete", {"order_id": 2}))
    t.run(on_data_loss="resnapshot")
    assert _generation(t) == 0
    assert t.events("resnapshot") == []
    assert len(t.events("capture_instance_switched")) == 1
    want = [(0, "paid"), (1, "new")]
    assert _bronze_latest(t, "order_id", "status") == want
    t.apply()
    assert captured(t.silver_rows(), "order_id", "status") == want
