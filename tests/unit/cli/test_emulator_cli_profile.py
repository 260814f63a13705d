"""`mssql-cdc emulator create --profile`, `advance` and `serve --profile`: the realistic profile
from the command line (docs/emulator.md, 'Profiles')."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path

import pytest

from mssql_cdc.cli import main
from mssql_cdc.emulator import Emulator
from mssql_cdc.emulator.jobs import JobClock


def run(*args: str) -> int:
    return main(list(args))


def test_create_with_the_realistic_profile_lags_a_commit_until_advance_passes_a_cycle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "e.db"
    assert run("emulator", "create", str(path), "--demo", "--profile", "realistic") == 0
    with Emulator.open(path) as emu:
        assert emu.settings()["polling_interval_seconds"] == 5
        lsn = emu.commit([("insert", "dbo.orders", {"order_id": 1})], at="2026-09-28T13:50:01")
    # The job started at the create's clock, 13:50:00: its first cycle is at 13:50:05.
    assert run("emulator", "advance", str(path), "--to", "2026-09-28T13:50:04") == 0
    assert Emulator.open(path).max_lsn() is None
    assert run("emulator", "advance", str(path), "--to", "2026-09-28T13:50:05") == 0
    assert Emulator.open(path).max_lsn() == lsn
    out = capsys.readouterr().out
    assert f"clock at 2026-09-28T13:50:05; max_lsn {lsn}; 0 pending" in out


def test_create_refuses_the_realistic_profile_with_immediate_capture_and_leaves_no_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "e.db"
    args = ("emulator", "create", str(path), "--profile", "realistic", "--capture", "immediate")
    assert run(*args) == 1
    assert "profile='realistic' captures in cycles" in capsys.readouterr().err
    assert list(tmp_path.glob("e.db*")) == []


def test_advance_to_a_time_before_the_clock_is_an_emulator_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "e.db"
    assert run("emulator", "create", str(path), "--profile", "realistic") == 0
    assert run("emulator", "advance", str(path), "--to", "2026-09-28T13:00:00") == 1
    assert "before the emulator's last time" in capsys.readouterr().err


def test_a_job_clock_captures_a_served_files_commits_on_the_wall_clock(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    assert run("emulator", "create", str(path), "--demo", "--start", "2020-01-01T00:00:00") == 0
    with Emulator.open(path) as emu:
        emu.configure(capture="manual", polling_interval_seconds=1)
        lsn = emu.commit([("insert", "dbo.orders", {"order_id": 1})])  # at the wall clock
        assert emu.max_lsn() is None
        clock = JobClock(path, tick=0.2)
        try:
            deadline = time.monotonic() + 30
            while emu.max_lsn() is None and time.monotonic() < deadline:
                time.sleep(0.2)
        finally:
            clock.stop()
        assert emu.max_lsn() == lsn
        assert emu.now() >= datetime(2026, 1, 1)
