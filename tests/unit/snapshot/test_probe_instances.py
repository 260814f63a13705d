"""The snapshot probe resolves the capture instance by the stream's rule, on the emulator."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from mssql_cdc.emulator import Emulator
from mssql_cdc.options.config import SourceConfig
from mssql_cdc.snapshot.probe import open_probe


def test_the_probe_follows_a_disabled_default_named_instance_to_its_newer_one(
    tmp_path: Path,
) -> None:
    emu = Emulator.create(tmp_path / "e.db", start=datetime(2026, 9, 28, 13, 50))
    emu.create_table(
        "dbo.orders", {"order_id": "int", "status": "nvarchar(20)"}, primary_key="order_id"
    )
    emu.enable_cdc("dbo.orders")
    emu.commit(
        [("insert", "dbo.orders", {"order_id": 1, "status": "new"})], at="2026-09-28T13:51:00"
    )
    newer = emu.enable_cdc("dbo.orders", capture_instance="dbo_orders_v2")
    emu.commit(
        [("insert", "dbo.orders", {"order_id": 2, "status": "new"})], at="2026-09-28T13:52:00"
    )
    emu.disable_cdc("dbo_orders")
    options = {
        "backend": "emulator",
        "emulatorPath": str(emu.path),
        "captureInstance": "dbo_orders",
    }
    probe = open_probe(SourceConfig.from_options(options))
    resolved = probe.resolved()
    assert (resolved.capture_instance, resolved.table) == (newer, "dbo.orders")
    assert resolved.start_lsn == emu.min_lsn(newer)
    assert [i.name for i in probe.observe().instances] == [newer]


def test_the_probe_leaves_out_an_instance_capture_has_not_reached_yet(tmp_path: Path) -> None:
    emu = Emulator.create(tmp_path / "e.db", start=datetime(2026, 9, 28, 13, 50), capture="manual")
    emu.create_table("dbo.orders", {"order_id": "int"}, primary_key="order_id")
    emu.enable_cdc("dbo.orders")
    emu.commit([("insert", "dbo.orders", {"order_id": 1})], at="2026-09-28T13:51:00")
    emu.drain()
    emu.enable_cdc("dbo.orders", capture_instance="dbo_orders_v2")  # start_lsn NULL until capture
    options = {
        "backend": "emulator",
        "emulatorPath": str(emu.path),
        "captureInstance": "dbo_orders",
    }
    probe = open_probe(SourceConfig.from_options(options))
    assert [(i.name, i.start_lsn) for i in probe.observe().instances] == [
        ("dbo_orders", emu.min_lsn("dbo_orders"))
    ]
    emu.drain()
    assert [i.name for i in probe.observe().instances] == ["dbo_orders", "dbo_orders_v2"]
