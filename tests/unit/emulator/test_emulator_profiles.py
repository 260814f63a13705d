"""The realistic profile: capture lag in cycles, idle entries and the scheduled cleanup job, on the
emulator's clock (docs/emulator.md, 'Profiles'; decision 1240). Every expected time is worked out
by hand from the schedule in the test's comment."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest

from mssql_cdc.emulator import ClockError, Emulator

START = datetime(2026, 9, 28, 13, 50)
COLUMNS = {"order_id": "int", "status": "nvarchar(20)"}


def realistic(path: Path) -> Emulator:
    emu = Emulator.create(path, start=START, profile="realistic")
    emu.create_table("dbo.orders", COLUMNS, primary_key="order_id")
    emu.enable_cdc("dbo.orders")
    return emu


def order(order_id: int) -> list[tuple[str, str, dict[str, object]]]:
    return [("insert", "dbo.orders", {"order_id": order_id, "status": "new"})]


def at(seconds: float) -> datetime:
    return START + timedelta(seconds=seconds)


def test_the_realistic_profile_stores_a_real_servers_job_defaults(tmp_path: Path) -> None:
    settings = realistic(tmp_path / "e.db").settings()
    assert {k: settings[k] for k in ("capture", "maxtrans", "maxscans")} == {
        "capture": "manual",
        "maxtrans": 500,
        "maxscans": 10,
    }
    assert settings["polling_interval_seconds"] == 5
    assert settings["idle_interval_seconds"] == 300
    assert settings["cleanup_job_time"] == "02:00"
    assert settings["retention_minutes"] == 4320


def test_the_default_profile_still_shows_a_commit_at_once_and_runs_no_job(tmp_path: Path) -> None:
    emu = Emulator.create(tmp_path / "e.db", start=START)
    emu.create_table("dbo.orders", COLUMNS, primary_key="order_id")
    emu.enable_cdc("dbo.orders")
    lsn = emu.commit(order(1), at=at(1))
    assert emu.max_lsn() == lsn
    emu.advance(at=at(86_400))
    assert [e["start_lsn"] for e in emu.lsn_time_mapping()] == [lsn]
    assert emu.settings()["polling_interval_seconds"] is None


def test_a_commit_is_invisible_to_readers_until_the_capture_cycle_after_it(tmp_path: Path) -> None:
    emu = realistic(tmp_path / "e.db")
    reader = emu.reader()
    lsn = emu.commit(order(1), at=at(1))  # the job's cycles run at +5 s, +10 s, ...
    assert emu.advance(at=at(4.5)) == at(4.5)
    assert reader.max_lsn() is None
    assert emu.pending_capture() == 1
    emu.advance(at=at(5))
    assert reader.max_lsn() == lsn
    assert emu.lsn_time(lsn) == at(1)  # the entry keeps the commit's time, not the cycle's


def test_a_burst_over_maxtrans_times_maxscans_lags_over_several_cycles(tmp_path: Path) -> None:
    emu = realistic(tmp_path / "e.db")
    emu.configure(maxtrans=3, maxscans=2)  # 6 transactions a cycle
    lsns = emu.commit_many([order(i) for i in range(1, 16)], at=at(1))
    visible = []
    for second in (5, 10, 15):
        emu.advance(at=at(second))
        visible.append(emu.max_lsn())
    assert visible == [lsns[5], lsns[11], lsns[14]]


def test_an_idle_server_writes_an_idle_entry_every_five_minutes_on_the_cycle_grid(
    tmp_path: Path,
) -> None:
    emu = realistic(tmp_path / "e.db")
    emu.commit(order(1), at=at(1))
    emu.advance(at=at(1_000))
    # The commit's entry at +1 s, then the first cycle 300 s or more after the newest entry:
    # +305 s, +605 s, +905 s.
    entries = emu.lsn_time_mapping()
    assert [e["tran_end_time"] for e in entries] == [at(1), at(305), at(605), at(905)]
    assert [e["tran_id"] == b"\x00" * 10 for e in entries] == [False, True, True, True]


def test_the_cleanup_job_runs_at_two_in_the_morning_and_purges_by_retention(tmp_path: Path) -> None:
    emu = realistic(tmp_path / "e.db")
    emu.configure(retention_minutes=60, idle_interval_seconds=None)
    first = emu.commit(order(1), at=at(1))
    second = emu.commit(order(2), at=at(2))
    emu.commit(order(3), at=datetime(2026, 9, 29, 1, 30))  # retention keeps entries after 00:30
    emu.advance(at=datetime(2026, 9, 29, 1, 59, 59))
    assert emu.min_lsn("dbo_orders") < first
    emu.advance(at=datetime(2026, 9, 29, 2, 0))
    assert emu.min_lsn("dbo_orders") == second
    assert [r["order_id"] for r in emu.change_rows("dbo_orders")] == [2, 3]


def test_a_profile_that_cannot_keep_the_capture_mode_asked_for_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="profile='realistic' captures in cycles"):
        Emulator.create(tmp_path / "a.db", profile="realistic", capture="immediate")
    unknown = "profile='fast' is not known; use one of immediate, realistic"
    with pytest.raises(ValueError, match=unknown):
        Emulator.create(tmp_path / "b.db", profile="fast")  # type: ignore[arg-type]
    assert not (tmp_path / "a.db").exists()
    assert not (tmp_path / "b.db").exists()


def test_advance_refuses_a_time_before_the_emulators_last_time(tmp_path: Path) -> None:
    emu = realistic(tmp_path / "e.db")
    emu.advance(at=at(60))
    with pytest.raises(ClockError, match="before the emulator's last time"):
        emu.advance(at=at(30))
