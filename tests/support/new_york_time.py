"""The test oracle for a server in New York: SQL Server's local commit times turned back into UTC.

Shared by the emulator's unit tests and the source's Spark test, written with zoneinfo only.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

ZONE = "America/New_York"


def expected_utc(t: datetime) -> datetime:
    """The earliest UTC instant whose New York local time equals that of t."""
    zone = ZoneInfo(ZONE)

    def local(u: datetime) -> datetime:
        return u.replace(tzinfo=UTC).astimezone(zone).replace(tzinfo=None)

    wall = local(t)
    return min(
        wall + timedelta(hours=h) for h in (4, 5) if local(wall + timedelta(hours=h)) == wall
    )
