"""Shared setup of the snapshot tests: an emulator source, its config, and the plain-Python
oracle that rebuilds the latest image from bronze's snapshot rows and the emulator's change
table (the rebuild rule of spec 30 section 1), written without the code under test."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from mssql_cdc.emulator import Emulator
from mssql_cdc.options.config import SourceConfig
from tests.support import emulator_profile

CI = "dbo_orders"


def at(seconds: float) -> str:
    """An ISO time `seconds` after 2026-09-28 14:00:00 UTC."""
    h, rest = divmod(int(seconds), 3600)
    m, s = divmod(rest, 60)
    return f"2026-09-28T{14 + h:02d}:{m:02d}:{s:02d}"


def _hex(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes | bytearray):
        return "0x" + bytes(value).hex().upper()
    return str(value).upper().replace("0X", "0x")


@dataclass
class Source:
    spark: SparkSession
    emu: Emulator
    path: Path
    target: str
    facts: str
    clock: float = 0.0

    def config(self, **options: str) -> SourceConfig:
        return SourceConfig.from_options(
            {
                "captureInstance": CI,
                "backend": "emulator",
                "emulatorPath": str(self.path),
                **options,
            }
        )

    def tick(self) -> str:
        self.clock += 1
        return at(self.clock)

    def wait_for_capture(self) -> None:
        """On the realistic profile, lets the capture job pass every commit so far (the clock
        moves on a few seconds); a no-op on immediate."""
        done = emulator_profile.wait_for_capture(self.emu, at(self.clock))
        self.clock = max(self.clock, (done - datetime(2026, 9, 28, 14)).total_seconds())

    def insert(self, *ids: int) -> str:
        changes: Any = [
            ("insert", "dbo.orders", {"order_id": i, "status": f"s{i}", "qty": i}) for i in ids
        ]
        return self.emu.commit(changes, at=self.tick())

    def update(self, order_id: int, status: str) -> str:
        change: Any = ("update", "dbo.orders", {"order_id": order_id, "status": status})
        return self.emu.commit([change], at=self.tick())

    def delete(self, order_id: int) -> str:
        change: Any = ("delete", "dbo.orders", {"order_id": order_id})
        return self.emu.commit([change], at=self.tick())

    def bronze(self) -> list[dict[str, Any]]:
        return [r.asDict() for r in self.spark.read.format("delta").load(self.target).collect()]

    def facts_rows(self, event: str | None = None) -> list[dict[str, Any]]:
        rows = [r.asDict() for r in self.spark.read.format("delta").load(self.facts).collect()]
        return [r for r in rows if event is None or r["event"] == event]

    def source_rows(self) -> dict[int, tuple[object, object]]:
        return {r["order_id"]: (r["status"], r["qty"]) for r in self.emu.rows("dbo.orders")}  # type: ignore[misc]

    def rebuilt(self, point: str) -> dict[int, tuple[object, object]]:
        """Snapshot rows of `point` plus the emulator's change rows after it, last row wins."""
        self.wait_for_capture()  # commits the snapshot read but capture had not reached
        entries: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
        for r in self.bronze():
            if r["_operation"] == 0 and (r.get("_snapshot") or r["_start_lsn"]) == point:
                entries.append(((r["_start_lsn"], -1, "", 0), r))
        for c in self.emu.change_rows(CI):
            start = _hex(c["__$start_lsn"])
            op = int(c["__$operation"])  # type: ignore[call-overload]
            if start is None or start <= point or op == 3:
                continue
            order = (start, c.get("__$command_id") or 0, _hex(c["__$seqval"]) or "", op)
            entries.append((order, {**c, "_operation": op}))
        image: dict[int, tuple[object, object]] = {}
        for _, row in sorted(entries, key=lambda e: e[0]):
            if row["_operation"] == 1:
                image.pop(row["order_id"], None)
            else:
                image[row["order_id"]] = (row["status"], row["qty"])
        return image


def make_source(spark: SparkSession, tmp_path: Path) -> Source:
    path = tmp_path / "source.db"
    emu = emulator_profile.create(path, start="2026-09-28T13:50:00")
    emu.create_table(
        "dbo.orders",
        {"order_id": "int", "status": "nvarchar(20)", "qty": "int"},
        primary_key="order_id",
    )
    emu.enable_cdc("dbo.orders")
    return Source(spark, emu, path, str(tmp_path / "bronze"), str(tmp_path / "facts"))
