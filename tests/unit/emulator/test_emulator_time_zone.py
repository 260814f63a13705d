"""The emulator's server time zone (spec 40, section 3.3): catalog times stored as local times of
an IANA zone, UTC twins for the Emulator face. Oracles: zoneinfo and brute force in plain Python.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from mssql_cdc.emulator import Emulator

NEW_YORK = "America/New_York"


def local(utc: datetime, zone: str) -> datetime:
    """The naive local time of a naive UTC instant, by zoneinfo."""
    return utc.replace(tzinfo=UTC).astimezone(ZoneInfo(zone)).replace(tzinfo=None)


def zoned(path: Path, zone: str, start: str) -> Emulator:
    emu = Emulator.create(path, start=start)
    emu.configure(time_zone=zone)
    emu.create_table("dbo.orders", {"order_id": "int", "note": "int"}, primary_key="order_id")
    emu.enable_cdc("dbo.orders")
    return emu


def test_the_zone_is_set_before_the_first_lsn_and_unknown_zones_are_refused(
    tmp_path: Path,
) -> None:
    emu = Emulator.create(tmp_path / "e.db")
    with pytest.raises(ValueError, match=r"Mars/Olympus.*IANA name such as America/New_York"):
        emu.configure(time_zone="Mars/Olympus")
    with pytest.raises(ValueError, match="IANA"):
        emu.configure(time_zone="../../etc/passwd")
    assert emu.settings()["time_zone"] == "UTC"
    emu.configure(time_zone=NEW_YORK)
    emu.create_table("dbo.t", {"id": "int"}, primary_key="id")
    emu.configure(time_zone="Europe/Berlin")  # no LSN yet: still allowed
    emu.enable_cdc("dbo.t")  # allocates the first LSNs
    with pytest.raises(ValueError, match="only before the first LSN"):
        emu.configure(time_zone=NEW_YORK)
    emu.configure(time_zone="Europe/Berlin")  # the same zone again changes nothing
    assert emu.reader().server_time_zone() == "Europe/Berlin"


@pytest.mark.parametrize(
    "zone",
    [
        "America/New_York",
        "Europe/Berlin",
        "Europe/Dublin",  # negative daylight saving in its rules
        "Australia/Sydney",  # summer across the new year
        "Pacific/Chatham",  # +12:45 / +13:45
        "Asia/Kolkata",
        "America/Sao_Paulo",  # daylight saving abolished in 2019
    ],
)
def test_stored_local_times_match_zoneinfo_from_2026_to_2060(tmp_path: Path, zone: str) -> None:
    emu = zoned(tmp_path / "e.db", zone, "2026-01-01T00:00:00")
    # Every 6 days and 7 hours: lands on all hours, both sides of every switch, and past 2037,
    # where the zone files end and their POSIX rules take over.
    times = [datetime(2026, 1, 2) + i * timedelta(days=6, hours=7) for i in range(2000)]
    lsns = emu.commit_many(
        [[("insert", "dbo.orders", {"order_id": i})] for i in range(len(times))], at=times
    )
    reader = emu.reader()
    wrong = [
        (t, reader.lsn_to_time(lsn), local(t, zone))
        for t, lsn in zip(times, lsns, strict=True)
        if reader.lsn_to_time(lsn) != local(t, zone) or emu.lsn_time(lsn) != t
    ]
    assert wrong == []


def fall_back(tmp_path: Path) -> tuple[Emulator, list[datetime], list[str]]:
    """Commits around New York's fall-back (2026-11-01 06:00 UTC, 02:00 EDT -> 01:00 EST)."""
    emu = zoned(tmp_path / "e.db", NEW_YORK, "2026-11-01T03:00:00")
    utc = [datetime(2026, 11, 1, h, m) for h, m in ((4, 40), (5, 10), (5, 50), (6, 20), (7, 30))]
    lsns = [
        emu.commit([("insert", "dbo.orders", {"order_id": i})], at=t) for i, t in enumerate(utc)
    ]
    return emu, utc, lsns


def test_local_times_repeat_across_fall_back_while_lsns_and_utc_times_rise(
    tmp_path: Path,
) -> None:
    emu, utc, lsns = fall_back(tmp_path)
    emu.add_column("dbo.orders", "extra", "int", at="2026-11-01T07:45:00")
    reader = emu.reader()
    stored = [reader.lsn_to_time(lsn) for lsn in lsns]
    assert stored == [local(t, NEW_YORK) for t in utc]
    assert stored[3] < stored[2]  # 01:20 EST after 01:50 EDT
    mapping = emu.lsn_time_mapping()
    assert [e["tran_end_time"] for e in mapping] == utc
    assert [e["tran_begin_time"] for e in mapping] == utc
    assert [e["ddl_time"] for e in emu.ddl_history("dbo_orders")] == [datetime(2026, 11, 1, 7, 45)]
    assert [e["ddl_time"] for e in reader.ddl_history("dbo_orders")] == [
        datetime(2026, 11, 1, 2, 45)
    ]
    [instance] = reader.capture_instances("dbo.orders")
    assert instance["create_date"] == local(datetime(2026, 11, 1, 3), NEW_YORK)
    assert set(instance) == set(reader.resolve_instance("dbo_orders")) - {"table"}
    batch = reader.read_changes("dbo_orders", lsns[0], lsns[-1]).read_all()
    assert batch.column("_commit_ts").to_pylist() == stored


def test_time_to_lsn_compares_local_times_as_sql_server_does(tmp_path: Path) -> None:
    emu, utc, lsns = fall_back(tmp_path)
    reader = emu.reader()
    entries = [(lsn, local(t, NEW_YORK)) for lsn, t in zip(lsns, utc, strict=True)]

    def brute(relation: str, t: datetime) -> str | None:
        if relation.startswith("largest"):
            ok = [e for e in entries if (e[1] <= t if relation.endswith("equal") else e[1] < t)]
            best = max((e[1] for e in ok), default=None)
            return max((e[0] for e in ok if e[1] == best), default=None)
        ok = [e for e in entries if (e[1] >= t if relation.endswith("equal") else e[1] > t)]
        best = min((e[1] for e in ok), default=None)
        return min((e[0] for e in ok if e[1] == best), default=None)

    probes = [datetime(2026, 11, 1, 0, 30) + timedelta(minutes=10 * i) for i in range(20)]
    relations = (
        "largest less than",
        "largest less than or equal",
        "smallest greater than",
        "smallest greater than or equal",
    )
    for relation in relations:
        for t in probes:
            assert reader.time_to_lsn(relation, t) == brute(relation, t), (relation, t)


def test_the_cleanup_job_counts_retention_back_from_the_newest_local_time(
    tmp_path: Path,
) -> None:
    emu, utc, lsns = fall_back(tmp_path)
    emu.run_cleanup_job(retention_minutes=60)
    # Newest local time 02:30 EST (07:30 UTC); 60 minutes earlier is 01:30 local, and the newest
    # entry at or before it locally is 01:20 EST (06:20 UTC), not 01:10 EDT.
    locals_ = [local(t, NEW_YORK) for t in utc]
    cut = max(locals_) - timedelta(minutes=60)
    expected = max((lt, lsn) for lt, lsn in zip(locals_, lsns, strict=True) if lt <= cut)[1]
    assert emu.min_lsn("dbo_orders") == expected == lsns[3]
    # The local clock's repeated hour keeps the first entries: rows strictly below the mark go.
    assert [r["__$start_lsn"] for r in emu.change_rows("dbo_orders")] == lsns[3:]


def test_time_at_or_below_is_the_newest_entry_not_above_the_lsn(tmp_path: Path) -> None:
    emu, utc, lsns = fall_back(tmp_path)
    idle = emu.idle(at="2026-11-01T08:00:00")
    reader = emu.reader()
    entries = [(lsn, local(t, NEW_YORK)) for lsn, t in zip(lsns, utc, strict=True)]
    entries.append((idle, local(datetime(2026, 11, 1, 8), NEW_YORK)))
    probes = [p for lsn, _ in entries for p in (lsn, reader.increment_lsn(lsn))]
    probes += [reader.decrement_lsn(entries[0][0]), "0x" + "F" * 20]
    for probe in probes:
        below = [t for lsn, t in entries if lsn <= probe]
        assert reader.time_at_or_below(probe) == (below[-1] if below else None), probe
    assert reader.time_at_or_below(bytes.fromhex(lsns[1][2:])) == entries[1][1]
    with pytest.raises(ValueError, match="lsn"):
        reader.time_at_or_below("0xZZ")
