"""The library's only reader of "now", so tests can pin time with `mssql_cdc.testing.clock`."""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["now", "pinned"]

_pinned: list[datetime] = []


def now() -> datetime:
    """Return the current time as an aware UTC datetime (the pinned one inside `testing.clock`)."""
    if _pinned:
        return _pinned[-1]
    return datetime.now(UTC)


def pinned() -> list[datetime]:
    """The stack of pinned times; `testing.clock` pushes and pops it."""
    return _pinned
