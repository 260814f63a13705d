"""The Delta sink `delta_sink`: bronze append first, then one facts commit per batch; and the
batch's aggregates as Spark columns (`aggregate_columns`), which the stream also observes."""

from __future__ import annotations

from mssql_cdc.sink.micro_batch import aggregate_columns
from mssql_cdc.sink.writer import delta_sink

__all__ = [
    "aggregate_columns",
    "delta_sink",
]
