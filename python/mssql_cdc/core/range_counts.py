"""The `counts` object of a range metrics file: what a task counted of the rows it handed Spark.

The sink's commit needs, before its append, the batch's rows, LSN and commit-time ranges and
operation counts; each task counts them as it reads (`mssql_cdc.source.range_counter`) and
writes them here, in the range's metrics file, which spares the sink an aggregate job over the
cached batch.
"""

from __future__ import annotations

from typing import TypedDict

__all__ = ["RangeCounts"]


class RangeCounts(TypedDict):
    """The `counts` object of a range metrics file; times are ISO text with microseconds."""

    rows: int
    min_lsn: str | None
    max_lsn: str | None
    min_commit_ts: str | None
    max_commit_ts: str | None
    deletes: int
    inserts: int
    updates: int
