"""The TDS front end's AT TIME ZONE over a real driver, as SQL Server documents it
(https://learn.microsoft.com/sql/t-sql/queries/at-time-zone-transact-sql): zones by their Windows
names; a local time in the gap when clocks are set ahead is moved ahead and shown with the offset
after the change; one the zone repeats when clocks are set back is shown with the offset before
the change (the earlier instant). Expected values: the page's examples and hand-written offsets.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pymssql
import pytest

from mssql_cdc.emulator import Emulator
from mssql_cdc.emulator.serve import serve


@pytest.fixture(scope="module")
def cursor(tmp_path_factory: pytest.TempPathFactory) -> Iterator[pymssql.Cursor]:
    path: Path = tmp_path_factory.mktemp("tz") / "e.db"
    Emulator.create(path, start="2026-01-01T00:00:00")
    with serve(path) as server:
        conn = pymssql.connect(**server.connect_kwargs("pymssql"))
        try:
            yield conn.cursor()
        finally:
            conn.close()


def at_time_zone(cursor: pymssql.Cursor, local: str, zone: str) -> datetime:
    cursor.execute("SELECT CONVERT(datetime2(0), %s) AT TIME ZONE %s;", (local, zone))
    [(value,)] = cursor.fetchall()
    assert isinstance(value, datetime)
    return value


def offset(hours: float) -> timezone:
    return timezone(timedelta(minutes=round(hours * 60)))


@pytest.mark.parametrize(
    ("local", "zone", "expected"),
    [
        # The page's examples (Central European Standard Time, 2022).
        ("2022-03-27T01:01:00", "Central European Standard Time", ("2022-03-27T01:01:00", 1)),
        ("2022-03-27T02:01:00", "Central European Standard Time", ("2022-03-27T03:01:00", 2)),
        ("2022-10-30T02:01:00", "Central European Standard Time", ("2022-10-30T02:01:00", 2)),
        ("2022-10-30T03:01:00", "Central European Standard Time", ("2022-10-30T03:01:00", 1)),
        # The same rules in New York, London and Lord Howe (a 30-minute change), 2026.
        ("2026-03-08T02:30:00", "Eastern Standard Time", ("2026-03-08T03:30:00", -4)),
        ("2026-11-01T01:30:00", "Eastern Standard Time", ("2026-11-01T01:30:00", -4)),
        ("2026-03-29T01:30:00", "GMT Standard Time", ("2026-03-29T02:30:00", 1)),
        ("2026-10-25T01:30:00", "GMT Standard Time", ("2026-10-25T01:30:00", 1)),
        ("2026-10-04T02:15:00", "Lord Howe Standard Time", ("2026-10-04T02:45:00", 11)),
        ("2026-04-05T01:45:00", "Lord Howe Standard Time", ("2026-04-05T01:45:00", 11)),
    ],
)
def test_at_time_zone_moves_a_gap_time_ahead_and_gives_a_repeated_time_its_earlier_offset(
    cursor: pymssql.Cursor, local: str, zone: str, expected: tuple[str, float]
) -> None:
    wall, hours = expected
    assert at_time_zone(cursor, local, zone) == datetime.fromisoformat(wall).replace(
        tzinfo=offset(hours)
    )


def test_at_time_zone_refuses_an_iana_name_as_sql_server_does(cursor: pymssql.Cursor) -> None:
    with pytest.raises(pymssql.Error, match="9820"):
        at_time_zone(cursor, "2026-01-01T00:00:00", "America/New_York")
