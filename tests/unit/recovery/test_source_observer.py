"""The recovery's source observer over an emulator file: the oracle is the emulator itself."""

from __future__ import annotations

from pathlib import Path

from mssql_cdc.core.recovery_decision import Instance
from mssql_cdc.emulator import Emulator
from mssql_cdc.options.config import SourceConfig
from mssql_cdc.recovery.observer import open_observer


def test_the_observer_reports_what_the_emulator_holds_before_and_after_cleanup(
    tmp_path: Path,
) -> None:
    emu = Emulator.create(tmp_path / "e.db", start="2026-09-28T13:50:00")
    emu.create_table("dbo.orders", {"order_id": "int"}, primary_key="order_id")
    emu.enable_cdc("dbo.orders")
    first = emu.commit([("insert", "dbo.orders", {"order_id": 1})], at="2026-09-28T14:00:00")
    second = emu.commit([("insert", "dbo.orders", {"order_id": 2})], at="2026-09-28T14:01:00")
    config = SourceConfig.from_options(
        {"backend": "emulator", "emulatorPath": str(emu.path), "captureInstance": "DBO_ORDERS"}
    )
    observer = open_observer(config)
    try:
        assert observer.max_lsn() == emu.max_lsn() == second
        assert observer.commit_ts(first) == "2026-09-28T14:00:00.000"
        assert observer.row_count() == 2
        emu.cleanup("dbo_orders", second)
        [instance] = observer.instances()
        assert instance == Instance(
            "dbo_orders", emu.min_lsn("dbo_orders"), second, "2026-09-28T14:01:00.000"
        )
    finally:
        observer.close()
