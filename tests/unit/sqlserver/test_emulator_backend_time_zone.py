"""The library's conversion of server-local commit times to UTC, end to end through the emulator
backend with a server in America/New_York over both daylight-saving switches of 2026.

Oracle (plain Python, zoneinfo): a commit at UTC instant t is stored as zoneinfo's local time of
t. AT TIME ZONE gives the earliest UTC instant with that local time, an hour early in the hour
fall-back repeats; the library's commit time is t itself, recovered from LSN order (decision
1320), since here a first-occurrence commit (01:50 EDT) precedes the repeated ones.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pyarrow as pa

from mssql_cdc.core import lsn
from mssql_cdc.core.batch_files import read_batch_files
from mssql_cdc.core.offsets import LsnRange
from mssql_cdc.emulator import Emulator
from mssql_cdc.options.config import SourceConfig
from mssql_cdc.source.range_reader import read_range
from mssql_cdc.sqlserver.emulated.backend import EmulatorBackend
from mssql_cdc.sqlserver.metadata import ReadColumn
from tests.support.new_york_time import ZONE, at_time_zone_utc

# Around 2026-03-08 07:00 UTC (02:00 EST -> 03:00 EDT) and 2026-11-01 06:00 UTC (02:00 EDT ->
# 01:00 EST): 06:20 and 06:40 UTC on November 1 fall in the repeated hour.
COMMITS = [
    datetime(2026, 3, 8, 6, 30),
    datetime(2026, 3, 8, 7, 30),
    datetime(2026, 11, 1, 5, 10),
    datetime(2026, 11, 1, 5, 50),
    datetime(2026, 11, 1, 6, 20),
    datetime(2026, 11, 1, 6, 40),
    datetime(2026, 11, 1, 7, 30),
]


def new_york(path: Path) -> tuple[Emulator, list[str]]:
    emu = Emulator.create(path, start="2026-03-08T04:00:00")
    emu.configure(time_zone=ZONE)
    emu.create_table(
        "dbo.orders", {"order_id": "int", "status": "nvarchar(20)"}, primary_key="order_id"
    )
    emu.enable_cdc("dbo.orders")
    lsns = [
        emu.commit([("insert", "dbo.orders", {"order_id": i, "status": "new"})], at=t)
        for i, t in enumerate(COMMITS)
    ]
    return emu, lsns


def test_at_time_zone_would_move_only_the_repeated_hour() -> None:
    moved = [t for t in COMMITS if at_time_zone_utc(t) != t]
    assert moved == [datetime(2026, 11, 1, 6, 20), datetime(2026, 11, 1, 6, 40)]
    assert at_time_zone_utc(datetime(2026, 11, 1, 6, 20)) == datetime(2026, 11, 1, 5, 20)


def test_commit_times_of_entries_and_of_lsns_between_them_come_out_in_utc(tmp_path: Path) -> None:
    _, lsns = new_york(tmp_path / "e.db")
    backend = EmulatorBackend(str(tmp_path / "e.db"))
    zone = backend.resolve_time_zone("auto")
    assert zone == ZONE
    for commit, t in zip(lsns, COMMITS, strict=True):
        assert backend.commit_time(lsn.Lsn(commit), zone) == t, t
        between = lsn.increment(commit)  # not an entry: the newest entry below it
        assert backend.commit_time(between, zone) == t, t
    assert backend.commit_time(lsn.decrement(lsns[0]), zone) is None


def test_commit_ts_of_every_change_row_is_the_utc_commit_time(tmp_path: Path) -> None:
    _, lsns = new_york(tmp_path / "e.db")
    backend = EmulatorBackend(str(tmp_path / "e.db"))
    batches = backend.read_changes(
        "dbo_orders",
        lsn.Lsn(lsns[0]),
        lsn.Lsn(lsns[-1]),
        columns=(ReadColumn("order_id", "INT"), ReadColumn("status", "STRING")),
        include_command_id=True,
        time_zone=ZONE,
        batch_rows=3,
    )
    rows = pa.Table.from_batches(list(batches)).to_pylist()
    assert [(r["order_id"], r["_commit_ts"]) for r in rows] == [
        (i, t) for i, t in enumerate(COMMITS)
    ]
    times = [r["_commit_ts"] for r in rows]
    assert times == sorted(times)  # non-decreasing in LSN order across the fall-back


def test_the_retention_watermark_of_a_range_is_the_utc_time_of_the_low_water_mark(
    tmp_path: Path,
) -> None:
    path = tmp_path / "e.db"
    emu, lsns = new_york(path)
    emu.run_cleanup_job(retention_minutes=60)
    # Newest local time 02:30 EST; 01:30 local is the cut; the newest entry at or before it
    # locally is 06:20 UTC (01:20 EST), so the mark is that commit. The cleanup removed the
    # mapping entries before it, so nothing shows that 01:20 is the second 01:20: the limit of
    # decision 1320, the earlier instant (AT TIME ZONE's) for the rows of the repeated hour, in
    # order, and the watermark equal to the first row's commit time, never ahead of it.
    mark = emu.min_lsn("dbo_orders")
    assert mark == lsns[4]
    metrics = tmp_path / "metrics"
    config = SourceConfig.from_options(
        {
            "captureInstance": "dbo_orders",
            "backend": "emulator",
            "emulatorPath": str(path),
            "metricsPath": str(metrics),
        }
    )
    part = LsnRange(
        capture_instance="dbo_orders",
        from_lsn=mark,
        to_lsn=lsns[-1],
        last=True,
        start_ts=None,
        null_columns=(),
        time_zone=ZONE,
        batch_start_lsn=mark,
        batch_end_lsn=lsns[-1],
    )
    columns = (ReadColumn("order_id", "INT"), ReadColumn("status", "STRING"))
    rows = pa.Table.from_batches(list(read_range(config, columns, part))).to_pylist()
    times = [r["_commit_ts"] for r in rows]
    assert times == [at_time_zone_utc(t) for t in COMMITS[4:]]
    assert times == sorted(times)
    [written] = read_batch_files(metrics).ranges
    assert written["retention_watermark_ts"] == times[0].isoformat(timespec="milliseconds")
    assert written["to_commit_ts"] == COMMITS[-1].isoformat(timespec="milliseconds")
    assert written["source_max_commit_ts"] == COMMITS[-1].isoformat(timespec="milliseconds")
