"""The test oracle for a server in New York: what SQL Server's AT TIME ZONE makes of a stored
local commit time, written with zoneinfo only.

Shared by the emulator's unit tests and the source's Spark test. The library's commit times are
not this: they are the true instants (decision 1320); this is what they correct.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

ZONE = "America/New_York"


def local_time(t: datetime, zone: str = ZONE) -> datetime:
    """The naive local time of zone `zone` at the naive UTC instant t (what the server stores)."""
    return t.replace(tzinfo=UTC).astimezone(ZoneInfo(zone)).replace(tzinfo=None)


def candidates_utc(t: datetime, zone: str = ZONE) -> tuple[datetime, datetime]:
    """The earliest and latest UTC instants whose local time in `zone` equals that of t, found
    by trying every quarter-hour offset from -14:00 to +14:00."""
    wall = local_time(t, zone)
    found = [
        wall - timedelta(minutes=15 * q)
        for q in range(-56, 57)
        if local_time(wall - timedelta(minutes=15 * q), zone) == wall
    ]
    return min(found), max(found)


def at_time_zone_utc(t: datetime, zone: str = ZONE) -> datetime:
    """The earliest UTC instant whose local time equals that of t: AT TIME ZONE's answer for a
    local time a fall-back repeats
    (https://learn.microsoft.com/sql/t-sql/queries/at-time-zone-transact-sql)."""
    return candidates_utc(t, zone)[0]
