"""The headroom forecast and the observed retention (spec 30 section 8), pure functions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from mssql_cdc.recovery.plan import forecast
from mssql_cdc.recovery.preflight import observed_retention_hours
from tests.unit.support.recovery_world import sample

NOW = datetime(2026, 10, 8, 12, 0, tzinfo=UTC)
ORIGIN = datetime(2026, 10, 6, 0, 0)


def test_falling_headroom_forecasts_the_loss_where_the_line_reaches_zero() -> None:
    # headroom = 60 - 10 h per day: the oracle's zero is 6 days after the origin.
    points = [ORIGIN + timedelta(hours=6 * i) for i in range(9)]
    rows = [sample(at, 60.0 - 10.0 * (at - ORIGIN).total_seconds() / 86400) for at in points]
    result = forecast(rows, now=NOW)
    assert result["samples"] == 9
    assert result["trend_hours_per_day"] is not None
    assert abs(result["trend_hours_per_day"] + 10.0) < 1e-9
    assert result["loss_by_trend_at"] is not None
    at = datetime.fromisoformat(result["loss_by_trend_at"])
    assert abs(at - (ORIGIN + timedelta(days=6)).replace(tzinfo=UTC)) < timedelta(minutes=1)
    newest = points[-1]
    headroom = 60.0 - 10.0 * 2
    assert (
        result["loss_if_stopped_at"] == (newest + timedelta(hours=headroom)).isoformat() + "+00:00"
    )
    hours_since = (NOW.replace(tzinfo=None) - newest).total_seconds() / 3600
    assert result["headroom_hours"] is not None
    assert abs(result["headroom_hours"] - (headroom - hours_since)) < 1e-9


def test_a_rising_trend_forecasts_no_loss_and_few_samples_no_trend() -> None:
    rising = [sample(ORIGIN + timedelta(hours=h), 10.0 + h) for h in (0, 5, 10)]
    assert forecast(rising, now=NOW)["loss_by_trend_at"] is None
    two = forecast(rising[:2], now=NOW)
    assert two["trend_hours_per_day"] is None
    assert two["samples"] == 2
    close = [sample(ORIGIN + timedelta(minutes=m), 5.0) for m in (0, 10, 20)]
    assert forecast(close, now=NOW)["trend_hours_per_day"] is None  # span under an hour


def test_samples_older_than_a_week_or_without_headroom_are_left_out() -> None:
    old = sample(ORIGIN - timedelta(days=10), 1.0)
    blank = sample(ORIGIN, None)
    result = forecast([old, blank], now=NOW)
    assert result == {
        "headroom_hours": None,
        "trend_hours_per_day": None,
        "loss_by_trend_at": None,
        "loss_if_stopped_at": None,
        "samples": 0,
    }


def test_the_observed_retention_is_the_smallest_span_of_the_last_week() -> None:
    rows = [
        sample(ORIGIN, 1.0, retention_hours=72.0),
        sample(ORIGIN + timedelta(hours=1), 1.0, retention_hours=70.5),
        sample(ORIGIN - timedelta(days=9), 1.0, retention_hours=2.0),
        sample(ORIGIN, 1.0),
    ]
    assert observed_retention_hours(rows, now=NOW) == 70.5
    assert observed_retention_hours([], now=NOW) is None
