"""The recovery's source observer over an emulator file: the oracle is the emulator itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from mssql_cdc.core.recovery_decision import Instance
from mssql_cdc.emulator import Emulator, serve
from mssql_cdc.emulator.wire_faults import WireFault
from mssql_cdc.options.config import SourceConfig
from mssql_cdc.recovery.observer import open_observer
from mssql_cdc.sqlserver.tsql import retry


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


def test_the_lost_interval_ends_at_the_true_instant_of_a_low_water_mark_in_a_repeated_hour(
    tmp_path: Path,
) -> None:
    # New York falls back at 06:00 UTC on 2026-11-01 (02:00 EDT -> 01:00 EST). Oracle: the UTC
    # instants the test set the clock to; AT TIME ZONE alone would give the mark's 01:40 EST as
    # 05:40 UTC (https://learn.microsoft.com/sql/t-sql/queries/at-time-zone-transact-sql), an
    # hour before the row it marks and before the lost interval's start (decision 1320).
    emu = Emulator.create(tmp_path / "e.db", start="2026-11-01T04:00:00")
    emu.configure(time_zone="America/New_York")
    emu.create_table("dbo.orders", {"order_id": "int"}, primary_key="order_id")
    emu.create_table("dbo.other", {"id": "int"}, primary_key="id")
    emu.enable_cdc("dbo.orders")
    emu.enable_cdc("dbo.other")  # its low water mark keeps the mapping's older entries
    times = ["05:10", "05:50", "06:20", "06:40", "07:30"]  # 01:10, 01:50 EDT, 01:20, 01:40 EST
    lsns = [
        emu.commit([("insert", "dbo.orders", {"order_id": i})], at=f"2026-11-01T{t}:00")
        for i, t in enumerate(times)
    ]
    config = SourceConfig.from_options(
        {"backend": "emulator", "emulatorPath": str(emu.path), "captureInstance": "dbo_orders"}
    )
    observer = open_observer(config)
    try:
        lost_from = observer.commit_ts(lsns[1])  # a stream that stopped after 01:50 EDT
        emu.cleanup("dbo_orders", lsns[3])
        [instance] = observer.instances()
        assert instance.min_lsn == lsns[3]
        assert (lost_from, instance.min_commit_ts) == (
            "2026-11-01T05:50:00.000",
            "2026-11-01T06:40:00.000",
        )
    finally:
        observer.close()


def test_the_observer_reads_again_on_a_new_connection_after_a_transient_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A chaos run restarted the server while a restarted job's pre-flight read max_lsn: the
    # stream failed with the driver's raw error. Microsoft lists 40613 (database not
    # currently available) among the transient errors to retry on a new connection
    # (https://learn.microsoft.com/azure/azure-sql/database/troubleshoot-common-errors-issues).
    monkeypatch.setattr(retry, "sleep", lambda _seconds: None)
    emu = Emulator.create(tmp_path / "e.db", start="2026-09-28T13:50:00")
    emu.create_table("dbo.orders", {"order_id": "int"}, primary_key="order_id")
    emu.enable_cdc("dbo.orders")
    lsn = emu.commit([("insert", "dbo.orders", {"order_id": 1})], at="2026-09-28T14:00:00")
    fault = WireFault("error", match="fn_cdc_get_max_lsn", number=40613, times=1)
    with serve(emu.path, faults=[fault]) as server:
        config = SourceConfig.from_options(
            {
                "backend": "pymssql",
                "connectionString": server.connection_string("pymssql"),
                "captureInstance": "dbo_orders",
            }
        )
        observer = open_observer(config)
        try:
            assert observer.max_lsn() == lsn
            assert observer.max_lsn() == lsn  # the fault fired once; the new connection stays
        finally:
            observer.close()
