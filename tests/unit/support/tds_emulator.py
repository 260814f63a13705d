"""The smallest emulator a TDS test serves (dbo.orders with one captured insert), and the
library's backends over a served file."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mssql_cdc.emulator import Emulator
from mssql_cdc.options.config import SourceConfig
from mssql_cdc.sqlserver.backend_choice import Backend, open_backend


def one_order(path: Path) -> Emulator:
    """A new emulator file at `path`: dbo.orders (order_id int key), captured, one insert."""
    emu = Emulator.create(path, start="2026-09-28T13:50:00")
    emu.create_table("dbo.orders", {"order_id": "int"}, primary_key="order_id")
    emu.enable_cdc("dbo.orders")
    emu.commit([("insert", "dbo.orders", {"order_id": 1})], at="2026-09-28T14:00")
    return emu


@contextmanager
def backend_over(path: Path, name: str, capture_instance: str) -> Iterator[Backend]:
    """The library's backend `name` over the emulator file at `path`: in process for
    "emulator", else through that driver against the file served over TDS; closed after."""
    emu = Emulator.open(path)
    try:
        with emu.serve() as srv:
            if name == "emulator":
                options = {"emulatorPath": str(path)}
            else:
                options = {"connectionString": srv.connection_string(name)}
            config = {"captureInstance": capture_instance, "backend": name, **options}
            opened = open_backend(SourceConfig.from_options(config))
            try:
                yield opened
            finally:
                opened.close()
    finally:
        emu.close()
