"""Commit instants from server-local mapping times across a fall-back (decision 1320), in three
zones: America/New_York, Europe/London and Australia/Lord_Howe (a 30-minute change).

Oracle (plain Python): the true UTC instants the server's clock read at each commit, written by
hand around each zone's 2026 fall-back; a stored local time's candidates are found by trying every
quarter-hour offset (SQL Server's AT TIME ZONE takes the earliest: learn.microsoft.com/sql/t-sql/
queries/at-time-zone-transact-sql). The rule must give back the true instants, in order.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import pyarrow as pa
import pytest

from mssql_cdc.core import lsn
from mssql_cdc.sqlserver import commit_instants
from mssql_cdc.sqlserver.commit_instants import Candidates, chain, instants
from mssql_cdc.sqlserver.emulated.local_time import local_candidates, local_candidates_array
from tests.support.new_york_time import at_time_zone_utc, candidates_utc, local_time

FALL_BACKS = {  # true commit instants (UTC) around each zone's 2026 fall-back; the first is
    # before the repeated local hour
    # 06:00Z: 02:00 EDT -> 01:00 EST; 01:00-02:00 local repeats
    "America/New_York": [
        "11-01 04:40",
        "11-01 05:10",
        "11-01 05:50",
        "11-01 06:05",
        "11-01 06:20",
        "11-01 06:55",
        "11-01 07:30",
    ],
    # 01:00Z: 02:00 BST -> 01:00 GMT; 01:00-02:00 local repeats
    "Europe/London": [
        "10-24 23:55",
        "10-25 00:10",
        "10-25 00:50",
        "10-25 01:05",
        "10-25 01:40",
        "10-25 02:10",
    ],
    # 15:00Z: 02:00 +11:00 -> 01:30 +10:30; 01:30-02:00 local repeats
    "Australia/Lord_Howe": [
        "04-04 14:20",
        "04-04 14:35",
        "04-04 14:55",
        "04-04 15:05",
        "04-04 15:25",
        "04-04 15:40",
    ],
}


def truth(zone: str) -> list[datetime]:
    return [datetime.strptime(f"2026-{t}", "%Y-%m-%d %H:%M") for t in FALL_BACKS[zone]]


def entries(zone: str, instants_utc: Sequence[datetime]) -> list[Candidates]:
    """Mapping entries as the server stores them, with candidates found by trying offsets."""
    found = []
    for i, t in enumerate(instants_utc):
        earliest, latest = candidates_utc(t, zone)
        found.append(Candidates(lsn.from_fields(40, i + 1, 1), earliest, latest))
    return found


def no_lookback(below: lsn.Lsn, n: int) -> list[Candidates]:
    raise AssertionError("no entry below the first is needed")


@pytest.mark.parametrize("zone", sorted(FALL_BACKS))
def test_at_time_zone_alone_goes_backwards_across_the_fall_back(zone: str) -> None:
    earliest = [e.earliest for e in entries(zone, truth(zone))]
    assert earliest != sorted(earliest)


@pytest.mark.parametrize("zone", sorted(FALL_BACKS))
def test_the_chain_gives_every_entry_its_true_instant_in_lsn_order(zone: str) -> None:
    got = instants(entries(zone, truth(zone)), no_lookback)
    assert got == truth(zone)
    assert got == sorted(got)


def test_the_new_york_entries_take_the_hand_written_instants() -> None:
    got = chain(entries("America/New_York", truth("America/New_York")), None)
    assert [t.strftime("%H:%M") for t in got] == [
        "04:40",
        "05:10",
        "05:50",
        "06:05",
        "06:20",
        "06:55",
        "07:30",
    ]


@pytest.mark.parametrize("zone", sorted(FALL_BACKS))
def test_a_lookup_starting_in_the_repeat_reads_back_to_an_unambiguous_entry(
    zone: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(commit_instants, "LOOKBACK_PAGE", 1)  # one entry per round trip
    every = entries(zone, truth(zone))
    asked: list[lsn.Lsn] = []

    def lookback(below: lsn.Lsn, n: int) -> list[Candidates]:
        asked.append(below)
        return [e for e in reversed(every) if e.lsn < below][:n]

    second = next(
        i for i, e in enumerate(every) if e.ambiguous and e.earliest < every[i - 1].earliest
    )
    assert instants(every[second:], lookback) == truth(zone)[second:]
    assert len(asked) == second  # back to the first entry, unambiguous in every zone here
    assert instants(every[:1], lookback) == truth(zone)[:1]  # unambiguous: no read back


@pytest.mark.parametrize("zone", sorted(FALL_BACKS))
def test_without_the_first_occurrence_the_repeat_takes_the_earlier_instant_in_order(
    zone: str,
) -> None:
    # The documented limit: the entries before the repeat are gone (a cleanup removed them) and
    # nothing shows the clock went back; the instants are AT TIME ZONE's, still non-decreasing.
    every = entries(zone, truth(zone))
    second = next(
        i for i, e in enumerate(every) if e.ambiguous and e.earliest < every[i - 1].earliest
    )
    got = instants(every[second:], lambda below, n: [])
    assert got == [at_time_zone_utc(t, zone) for t in truth(zone)[second:]]
    assert got == sorted(got)


@pytest.mark.parametrize(
    ("local", "zone", "expected"),
    [
        # In a spring-forward gap SQL Server takes the local time back by the offset before the
        # change (02:30 EST in New York is 07:30 UTC): one instant, no second candidate.
        (datetime(2026, 3, 8, 2, 30), "America/New_York", datetime(2026, 3, 8, 7, 30)),
        (datetime(2026, 3, 29, 1, 30), "Europe/London", datetime(2026, 3, 29, 1, 30)),
        (datetime(2026, 10, 4, 2, 15), "Australia/Lord_Howe", datetime(2026, 10, 3, 15, 45)),
    ],
)
def test_a_local_time_in_a_spring_forward_gap_has_sql_servers_one_instant(
    local: datetime, zone: str, expected: datetime
) -> None:
    assert local_candidates(local, zone) == (expected, expected)
    first, last = local_candidates_array(pa.array([local], pa.timestamp("us")), zone)
    assert first.to_pylist() == last.to_pylist() == [expected]


@pytest.mark.parametrize("zone", sorted(FALL_BACKS))
def test_the_in_process_candidates_are_both_instants_of_a_repeated_local_time(zone: str) -> None:
    walls = [local_time(t, zone) for t in truth(zone)]
    expected = [(e.earliest, e.latest) for e in entries(zone, truth(zone))]
    assert [local_candidates(w, zone) for w in walls] == expected
    first, last = local_candidates_array(pa.array(walls, pa.timestamp("us")), zone)
    assert list(zip(first.to_pylist(), last.to_pylist(), strict=True)) == expected
