"""The Delta sink `delta_sink`: bronze append first, then one facts commit per batch."""

from __future__ import annotations

from mssql_cdc.sink.writer import delta_sink

__all__ = [
    "delta_sink",
]
