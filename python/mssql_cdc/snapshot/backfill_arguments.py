"""`backfill()`'s arguments, checked before it touches Spark, the facts or the source."""

from __future__ import annotations

import math

from mssql_cdc.errors import ConfigError
from mssql_cdc.facts import validate_app_id
from mssql_cdc.tables import require_distinct, table_ref

__all__ = ["MAX_COUNT", "MAX_HEADROOM_HOURS", "MAX_SECONDS", "check_arguments"]

# Upper bounds of the numeric arguments: far above any real call.
MAX_COUNT = 2**31 - 1  # chunk_rows and max_waves: an int, as T-SQL's TOP and Spark take it
MAX_SECONDS = 31_536_000.0  # a year: one call's time budget
MAX_HEADROOM_HOURS = 874_913.0  # SQL Server's longest CDC retention, 52,494,800 minutes


def _count(name: str, value: object) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_COUNT:
        raise ConfigError(f"{name}={value!r}: pass None or an integer from 1 to {MAX_COUNT:,}")


def _number(name: str, value: object, *, positive: bool, maximum: float) -> None:
    if value is None:
        return
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or (value <= 0 if positive else value < 0) or value > maximum:  # type: ignore[operator]
        low = "above 0" if positive else "from 0"
        raise ConfigError(f"{name}={value!r}: pass None or a number {low} up to {maximum:,.0f}")


def check_arguments(
    target: object,
    app_id: object,
    facts_table: object,
    chunk_rows: object,
    max_waves: object,
    max_seconds: object,
    min_headroom_hours: object,
    target_wave_seconds: object = None,
) -> None:
    """Raise ConfigError naming the first bad argument of `backfill()`, before any I/O."""
    validate_app_id(app_id)
    table_ref(target, argument="target")
    table_ref(facts_table, argument="facts_table")
    require_distinct(target=target, facts_table=facts_table)
    _count("chunk_rows", chunk_rows)
    _count("max_waves", max_waves)
    _number("max_seconds", max_seconds, positive=True, maximum=MAX_SECONDS)
    _number("min_headroom_hours", min_headroom_hours, positive=False, maximum=MAX_HEADROOM_HOURS)
    _number("target_wave_seconds", target_wave_seconds, positive=True, maximum=MAX_SECONDS)
