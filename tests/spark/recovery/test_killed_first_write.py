"""A driver killed during its checkpoint's very first write does not block the stream forever.

A chaos run (docs/reliability.md) killed a job while Spark wrote `offsets/0`: the temporary
file of Hadoop's atomic create stayed (`offsets/.0.<uuid>.tmp` and its checksum), and every
restart failed with STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY ("should be empty on batch 0").
The oracle is the emulator's own rows.
"""

from __future__ import annotations

from pathlib import Path

from deltalake import DeltaTable
from pyspark.sql import SparkSession

from mssql_cdc import stream
from mssql_cdc.emulator import Emulator

UUID = "840bc75f-0647-4039-a95d-e96c56fae8c7"


def test_a_stream_killed_during_its_first_offsets_write_starts_again(
    spark: SparkSession, tmp_path: Path
) -> None:
    emu = Emulator.create(tmp_path / "e.db", start="2026-09-28T13:50:00")
    emu.create_table("dbo.orders", {"order_id": "int", "v": "int"}, primary_key="order_id")
    emu.enable_cdc("dbo.orders")
    emu.commit([("insert", "dbo.orders", {"order_id": 1, "v": 1})], at="2026-09-28T14:00:00")
    emu.commit([("insert", "dbo.orders", {"order_id": 2, "v": 2})], at="2026-09-28T14:01:00")
    checkpoint = tmp_path / "cp"
    (checkpoint / "offsets").mkdir(parents=True)
    (checkpoint / "commits").mkdir()
    (checkpoint / "metadata").write_text('{"id":"1d287883-a1c5-44e8-ba89-4023f0559af9"}')
    (checkpoint / "offsets" / f".0.{UUID}.tmp").write_text("")
    (checkpoint / "offsets" / f"..0.{UUID}.tmp.crc").write_text("")
    options = {
        "backend": "emulator",
        "emulatorPath": str(emu.path),
        "captureInstance": "dbo_orders",
    }
    target = str(tmp_path / "bronze")

    query = stream(spark, options).to_delta(
        target,
        "orders",
        str(checkpoint),
        str(tmp_path / "facts"),
        trigger={"availableNow": True},
    )
    query.awaitTermination(300)

    assert query.exception() is None
    rows = DeltaTable(target).to_pyarrow_table(columns=["order_id", "_operation"]).to_pylist()
    assert sorted((r["order_id"], r["_operation"]) for r in rows) == [(1, 2), (2, 2)]
