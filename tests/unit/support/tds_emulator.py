"""The smallest emulator a TDS test serves: dbo.orders with one captured insert."""

from __future__ import annotations

from pathlib import Path

from mssql_cdc.emulator import Emulator


def one_order(path: Path) -> Emulator:
    """A new emulator file at `path`: dbo.orders (order_id int key), captured, one insert."""
    emu = Emulator.create(path, start="2026-09-28T13:50:00")
    emu.create_table("dbo.orders", {"order_id": "int"}, primary_key="order_id")
    emu.enable_cdc("dbo.orders")
    emu.commit([("insert", "dbo.orders", {"order_id": 1})], at="2026-09-28T14:00")
    return emu
