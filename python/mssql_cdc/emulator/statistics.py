"""The statistics the emulator keeps on a table's primary key, as SQL Server keeps them for an
index (decision 1448): a histogram of at most 200 steps over the key's leading column, built by
a full scan in key order, with a modification counter the table's writes raise.

`UPDATE STATISTICS`, `sp_updatestats`, `Emulator.update_statistics` and
`EmulatorReader.update_statistics` build them; a read of missing or stale statistics
(`EmulatorReader.statistics`, `sys.dm_db_stats_histogram` over TDS) builds them first, as SQL
Server's AUTO_UPDATE_STATISTICS does. A build's reads count in `io_statistics` under
`"<table> (statistics)"`, apart from the statement that asked.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mssql_cdc.emulator._convert import from_micros

__all__ = ["HistogramStep", "KeyStatistics", "statistics_io_name"]


@dataclass(frozen=True)
class HistogramStep:
    """One step, with the columns `DBCC SHOW_STATISTICS ... WITH HISTOGRAM` shows: the step's
    upper bound, the rows strictly between it and the previous step's bound, the rows equal to
    it, the distinct values strictly between, and their average rows (1 when there are none)."""

    range_hi_key: object
    range_rows: float
    eq_rows: float
    distinct_range_rows: int
    avg_range_rows: float


@dataclass(frozen=True)
class KeyStatistics:
    """A primary key's statistics, as `sys.dm_db_stats_properties` shows them, with its
    histogram. `last_updated` is naive UTC."""

    rows: int
    rows_sampled: int
    last_updated: datetime
    modification_counter: int
    histogram: tuple[HistogramStep, ...]


def statistics_io_name(table: str) -> str:
    """The name a statistics build of `table` (`dbo.orders`) counts its reads under in
    `io_statistics`."""
    return f"{table} (statistics)"


def key_statistics(native: dict[str, Any]) -> KeyStatistics:
    """The native layer's dict as KeyStatistics."""
    return KeyStatistics(
        rows=int(native["rows"]),
        rows_sampled=int(native["rows_sampled"]),
        last_updated=from_micros(int(native["last_updated_us"])),
        modification_counter=int(native["modification_counter"]),
        histogram=tuple(HistogramStep(**step) for step in native["histogram"]),
    )
