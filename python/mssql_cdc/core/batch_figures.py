"""The batch figures a range's task hands Spark beside its rows, so the streaming query's
observed metric can fold them (decision 1391).

With the internal option `BATCH_FIGURES_OPTION` (only `to_delta` and `fan_out` set it), the
`mssql_cdc` source adds one column, `FIGURES_COLUMN`, a struct of `FIGURES_FIELDS`: NULL on
every change row, and set on one trailing row per task, whose other columns are all NULL. The
trailing row holds what the task writes to its metrics file (the end offset and its commit
time, the retention watermark, the source's newest commit, the capture lag) and the names of
the events the batch found. The sink never sees the column or the trailing rows: the query
drops them before `foreachBatch` hands the batch on.
"""

from __future__ import annotations

from typing import Final

__all__ = ["BATCH_FIGURES_OPTION", "FIGURES_COLUMN", "FIGURES_FIELDS"]

BATCH_FIGURES_OPTION: Final = "mssqlCdcBatchFigures"
"""The internal source option ("true") that adds `FIGURES_COLUMN` and the trailing rows."""

FIGURES_COLUMN: Final = "_mssql_cdc_figures"
"""The column of the trailing rows' figures; NULL on change rows."""

FIGURES_FIELDS: Final = (
    ("to_lsn", "STRING"),
    ("to_commit_ts", "STRING"),
    ("retention_watermark_ts", "STRING"),
    ("source_max_commit_ts", "STRING"),
    ("capture_lag_seconds", "DOUBLE"),
    ("batch_start_lsn", "STRING"),
    ("events", "STRING"),
)
"""The struct's fields and their Spark SQL types: the range metrics file's keys of those
names (times as its text), the batch's start offset, and the events' names joined by commas."""
