"""The emulator profile the Spark tier's stories run on, and waiting for capture on it.

`MSSQL_CDC_EMULATOR_PROFILE=realistic` (`make test-python EMULATOR_PROFILE=realistic`) runs the
stories that create their emulator here on a server with capture lag, idle entries and the
nightly cleanup job (docs/emulator.md, 'Profiles'); unset, they run on `immediate`.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from mssql_cdc.emulator import Emulator, Time
from mssql_cdc.emulator.profiles import PROFILES, Profile

ENV = "MSSQL_CDC_EMULATOR_PROFILE"


def profile() -> Profile:
    """The profile named by the environment, `immediate` when unset.

    Raises:
        ValueError: the variable names no profile (a typo must not quietly test the default).
    """
    name = os.environ.get(ENV, "") or "immediate"
    if name not in PROFILES:
        raise ValueError(f"{ENV}={name!r} is not a profile; use one of {', '.join(PROFILES)}")
    return "realistic" if name == "realistic" else "immediate"


def create(path: Path, *, pinned: Profile | None = None, **kw: Any) -> Emulator:
    """`Emulator.create` on the environment's profile, or on `pinned` for a story that only
    one profile can tell (say why where you pin it)."""
    return Emulator.create(path, profile=pinned or profile(), **kw)


def wait_for_capture(emu: Emulator, after: Time) -> datetime:
    """Moves the clock in capture intervals from `after` until nothing waits for capture, as a
    test against a server waits for its capture job; returns the clock's time (or `after`'s
    when nothing waited). A no-op on `immediate`."""
    clock = datetime.fromisoformat(after) if isinstance(after, str) else after
    interval = emu.settings()["polling_interval_seconds"]
    if not isinstance(interval, int):
        return clock
    while emu.pending_capture() > 0:
        clock += timedelta(seconds=interval + 1)
        emu.advance(at=clock)
    return clock
