"""Named server profiles for `Emulator.create` and `mssql-cdc emulator create --profile`.

`immediate` (the default) captures each commit inside it and runs no job, so tests see their
changes at once. `realistic` behaves like a SQL Server with its Agent jobs at their defaults:
capture lags in cycles every 5 s of the emulator's clock, idle entries mark
progress after 5 idle minutes, and the cleanup job runs daily at 02:00 server time.
"""

from __future__ import annotations

from typing import Literal, get_args

Profile = Literal["immediate", "realistic"]
"""A server profile's name."""

PROFILES: tuple[str, ...] = get_args(Profile)

REALISTIC_SETTINGS: dict[str, object] = {
    "maxtrans": 500,  # sys.sp_cdc_add_job's defaults for the capture job
    "maxscans": 10,
    "polling_interval_seconds": 5,
    "idle_interval_seconds": 300,
    "cleanup_job_time": "02:00",  # the cleanup job's daily schedule
}
"""The settings `profile="realistic"` stores after create, besides manual capture."""


def profile_settings(profile: str, capture: str | None) -> tuple[str, dict[str, object]]:
    """The capture mode to create a file with and the settings to store after it.

    Raises:
        ValueError: an unknown profile, or a capture mode the profile cannot keep.
    """
    if profile == "immediate":
        return (capture or "immediate"), {}
    if profile == "realistic":
        if capture not in (None, "manual"):
            raise ValueError(
                f"profile='realistic' captures in cycles (capture='manual'), not capture="
                f"{capture!r}; leave capture out, or use profile='immediate'"
            )
        return "manual", dict(REALISTIC_SETTINGS)
    raise ValueError(f"profile={profile!r} is not known; use one of {', '.join(PROFILES)}")
