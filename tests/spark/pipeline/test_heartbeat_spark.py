"""`mssql-cdc heartbeat` keeps an idle stream's end current: on the realistic profile, over TDS
through pymssql, an idle database leaves the stream's newest batch where its last change was,
and hourly beats give it an end at the newest beat, with the headroom the cleanup job leaves.

The realistic profile's capture job writes an idle entry every 5 minutes, as a capture job
does while the log it scans moves; here it writes none (`idle_interval_seconds=None`), the
database whose log holds nothing new that a heartbeat is for. The emulator's clock runs ahead
of the wall clock, so each beat commits at the simulated time the test chose (a served file
commits at the later of the two).

Oracle, worked out in plain Python from the times the test chose: the cleanup job's low
watermark is the newest `cdc.lsn_time_mapping` entry at or before its run time minus the
retention
(https://learn.microsoft.com/en-us/sql/relational-databases/system-stored-procedures/sys-sp-cdc-cleanup-change-table-transact-sql),
and the facts' formulas are docs/tables.md's: headroom = (end - watermark) in hours, lag =
(source max - end) in seconds.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from mssql_cdc import stream
from mssql_cdc.cli import main
from mssql_cdc.emulator import Emulator
from tests.spark.support.backends import backend_options

START = datetime(2031, 3, 1, 13, 50)  # ahead of the wall clock
RETENTION = timedelta(hours=12)
CLEANUP_AT = datetime(2031, 3, 4, 2, 0)  # the cleanup job's run among the beats
ONE_SECOND = timedelta(seconds=1)


def status(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    args = ["status", str(tmp_path / "ckpt"), "--app-id", "orders", "--facts"]
    assert main([*args, str(tmp_path / "facts"), "--json"]) == 0
    batch: dict[str, Any] = json.loads(capsys.readouterr().out)["facts"]["latest_batch"]
    return batch


def run_stream(spark: SparkSession, options: dict[str, str], tmp_path: Path) -> None:
    query = stream(spark, options).to_delta(
        str(tmp_path / "bronze"),
        "orders",
        str(tmp_path / "ckpt"),
        str(tmp_path / "facts"),
        trigger={"availableNow": True},
    )
    assert query.awaitTermination(300)
    assert query.exception() is None


def time_of(text: str) -> datetime:
    return datetime.fromisoformat(text)


def test_an_idle_stream_goes_stale_without_heartbeats_and_stays_current_with_them(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "e.db"
    emu = Emulator.create(path, start=START, profile="realistic")
    emu.configure(
        retention_minutes=int(RETENTION / timedelta(minutes=1)), idle_interval_seconds=None
    )
    emu.create_table("dbo.orders", {"order_id": "int"}, primary_key="order_id")
    emu.enable_cdc("dbo.orders")
    emu.create_table(
        "dbo.mssql_cdc_heartbeat", {"id": "tinyint", "beat_at": "datetime2(7)"}, primary_key="id"
    )
    emu.advance(at=START + 5 * ONE_SECOND)  # the capture job passes the enable
    last_change = START + 6 * ONE_SECOND
    emu.commit([("insert", "dbo.orders", {"order_id": 1})], at=last_change)
    emu.advance(at=START + 10 * ONE_SECOND)
    options = {**backend_options(path, "pymssql"), "captureInstance": "dbo_orders"}
    options_file = tmp_path / "options.json"
    options_file.write_text(json.dumps(options))
    run_stream(spark, options, tmp_path)
    assert time_of(status(tmp_path, capsys)["end_commit_ts"]) == last_change

    # Two idle days (cleanup runs at 02:00 on both): nothing commits, so the stream's newest
    # batch still ends at the last change, 47 hours behind the source's clock and far past the
    # 12 hours of retention, though it has read everything.
    idle_until = datetime(2031, 3, 3, 13, 0)
    emu.advance(at=idle_until)
    run_stream(spark, options, tmp_path)
    stale = status(tmp_path, capsys)
    assert time_of(stale["end_commit_ts"]) == last_change
    assert idle_until - time_of(stale["end_commit_ts"]) > RETENTION

    # Hourly beats from 13:30 to 03:30 the next day, the cleanup job running among them. The
    # stream reads once more before the cleanup: its end, then the 01:30 beat, stays above the
    # watermark (a stream that reads nothing while beats run past the retention would find its
    # end purged, as against a server).
    beats = [datetime(2031, 3, 3, 13, 30) + timedelta(hours=k) for k in range(15)]
    for k, beat in enumerate(beats):
        emu.advance(at=beat)
        flags = ["--create"] if k == 0 else []
        assert main(["heartbeat", "--options", str(options_file), "--once", *flags]) == 0
        if beat == CLEANUP_AT - timedelta(minutes=30):
            emu.advance(at=beat + 10 * ONE_SECOND)
            run_stream(spark, options, tmp_path)
            assert beat <= time_of(status(tmp_path, capsys)["end_commit_ts"]) < beat + ONE_SECOND
    emu.advance(at=beats[-1] + 10 * ONE_SECOND)  # the capture job takes the last beat
    run_stream(spark, options, tmp_path)
    current = status(tmp_path, capsys)

    end = time_of(current["end_commit_ts"])
    assert beats[-1] <= end < beats[-1] + ONE_SECOND  # the newest beat's commit
    assert time_of(current["source_max_commit_ts"]) == end
    assert current["ingestion_lag_seconds"] == 0.0
    cutoff = CLEANUP_AT - RETENTION
    watermark = max(b for b in [last_change, *beats] if b <= cutoff)
    assert watermark == beats[0]
    assert beats[0] <= time_of(current["retention_watermark_ts"]) < beats[0] + ONE_SECOND
    expected = round((beats[-1] - watermark) / timedelta(hours=1), 2)
    assert expected == 14.0
    assert current["retention_headroom_hours"] == pytest.approx(expected, abs=0.01)
