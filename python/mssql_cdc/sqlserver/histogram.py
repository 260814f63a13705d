"""Full-snapshot partition bounds read off the statistics histogram of a table's primary key
(decision 1448).

SQL Server keeps, for an index's statistics, a histogram of at most 200 steps over the key's
leading column (`sys.dm_db_stats_histogram`): each step's upper bound (`range_high_key`), the
rows strictly between it and the previous bound (`range_rows`) and the rows equal to it
(`equal_rows`). The rows below a step's bound are then known without reading the table, so
`n - 1` bounds that cut it into partitions of about equal rows are picked from the step bounds.
A bound is only where a partition starts: partitions stay open below and above, and rows
written since the statistics were built are still read once.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["StatsStep", "histogram_cuts"]


@dataclass(frozen=True)
class StatsStep:
    """One histogram step: its upper bound (a value of the key's leading column, as the backend
    compares it: lossless text over T-SQL), `range_rows` and `equal_rows`."""

    high_key: object
    range_rows: float
    equal_rows: float


def histogram_cuts(steps: Sequence[StatsStep], n: int) -> list[object]:
    """At most `n - 1` step bounds, rising, that cut the histogram's rows into `n` parts of about
    equal rows: for each `k * rows / n` the bound with the nearest count of rows below it, each
    bound used once and none with no row below it. Empty for no steps or `n < 2`."""
    below: list[float] = []  # rows strictly below each step's bound
    seen = 0.0
    for step in steps:
        below.append(seen + step.range_rows)
        seen += step.range_rows + step.equal_rows
    cuts: list[object] = []
    last = -1
    for k in range(1, n):
        target = k * seen / n
        i = bisect_left(below, target)
        if i > 0 and (i == len(below) or target - below[i - 1] <= below[i] - target):
            i -= 1  # the bound just under the target is nearer
        i = max(i, last + 1)
        if i >= len(below):
            break
        if below[i] <= 0:
            continue
        cuts.append(steps[i].high_key)
        last = i
    return cuts
