"""Pin the library's clock in tests: `with clock("2026-10-01T00:00:00+00:00"): ...`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

from mssql_cdc.core import clock as _clock
from mssql_cdc.errors import ConfigError

__all__ = ["clock"]


@contextmanager
def clock(at: datetime | str) -> Iterator[datetime]:
    """Make `mssql_cdc.core.clock.now()` return `at` (naive means UTC) inside the block."""
    value = datetime.fromisoformat(at) if isinstance(at, str) else at
    if not isinstance(value, datetime):
        raise ConfigError(f"clock: {at!r} is not a datetime or an ISO-8601 string")
    value = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    stack = _clock.pinned()
    stack.append(value)
    try:
        yield value
    finally:
        stack.pop()
