"""Progress values: the rate since a start, and how a message shows it."""

from __future__ import annotations

import pytest

from mssql_cdc.core import progress
from mssql_cdc.core.progress import Throughput, per_second


@pytest.mark.parametrize(
    ("rate", "text"),
    [(0.2576, "0.26 rows/s"), (3.0, "3 rows/s"), (12.4, "12 rows/s"), (12345.6, "12,346 rows/s")],
)
def test_a_slow_rate_keeps_two_significant_digits_instead_of_reading_zero(
    rate: float, text: str
) -> None:
    assert per_second(rate, "rows") == text


def test_the_rate_is_units_per_second_since_the_start(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [100.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: now[0])
    pace = Throughput()
    assert pace.rate(0) is None
    now[0] = 110.0
    assert pace.rate(5) == 0.5
