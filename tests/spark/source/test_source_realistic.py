"""The source on the realistic profile (docs/emulator.md, 'Profiles'; decision 1240): capture
lags in cycles of 5 s, a burst over maxtrans x maxscans spreads over several cycles, and an
idle server's capture job writes idle entries that the stream's offset follows. Every time is
simulated; the expected LSNs come from the emulator's own mapping, read by the test."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

from pyspark.sql import SparkSession

from mssql_cdc.emulator import Emulator
from tests.spark.source.test_source import last_offset_line, run

START = datetime(2026, 9, 28, 13, 50)


def at(seconds: float) -> datetime:
    return START + timedelta(seconds=seconds)


def insert(order_id: int) -> list[tuple[str, str, dict[str, object]]]:
    return [("insert", "dbo.orders", {"order_id": order_id, "status": "new"})]


def test_a_stream_reads_captured_commits_only_catches_up_a_burst_and_follows_idle_entries(
    spark: SparkSession, tmp_path: Path
) -> None:
    path, ckpt = tmp_path / "e.db", tmp_path / "ckpt"
    emu = Emulator.create(path, start=START, profile="realistic")
    emu.create_table(
        "dbo.orders", {"order_id": "int", "status": "nvarchar(20)"}, primary_key="order_id"
    )
    emu.enable_cdc("dbo.orders")
    emu.configure(maxtrans=2, maxscans=1)  # 2 transactions a cycle, so a burst of 5 lags

    # A stream started before the job's first cycle (+5 s) passed the enable would be refused
    # with "no start LSN yet; retry once the capture job has run" (decision 1040), as on a server.
    emu.advance(at=at(5))
    for i in range(3):
        emu.commit(insert(i), at=at(6 + i))  # after the +5 s cycle: nothing captured yet
    assert [r for b in run(spark, path, ckpt) for r in b] == []

    emu.advance(at=at(10))  # the +10 s cycle takes two of the three
    assert sorted(r["order_id"] for b in run(spark, path, ckpt) for r in b) == [0, 1]
    burst = emu.commit_many([insert(10 + i) for i in range(5)], at=at(11))
    seen = []
    for cycle in (15, 20, 25):  # 1 + 5 = 6 pending transactions, 2 a cycle
        emu.advance(at=at(cycle))
        seen.append(sorted(r["order_id"] for b in run(spark, path, ckpt) for r in b))
    assert seen == [[2, 10], [11, 12], [13, 14]]
    assert emu.max_lsn() == burst[-1]

    # An idle hour: the first cycle 300 s after the newest entry (+11 s) is +315 s, then one
    # every 300 s up to +3625 s: 12 idle entries.
    emu.advance(at=at(25 + 3600))
    entries = emu.lsn_time_mapping()
    idle = [e for e in entries if e["tran_id"] == b"\x00" * 10]
    assert len(idle) == 12
    assert [r for b in run(spark, path, ckpt) for r in b] == []
    newest = entries[-1]
    assert newest["start_lsn"] == emu.max_lsn()
    assert json.loads(last_offset_line(ckpt)) == {
        "lsn": newest["start_lsn"],
        "commit_ts": newest["tran_end_time"].isoformat(timespec="milliseconds"),
    }
