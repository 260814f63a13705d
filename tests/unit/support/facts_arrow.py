"""The facts table's columns as an Arrow schema, for tests that write a facts table with
deltalake, and the canonical text of a small LSN."""

from __future__ import annotations

import pyarrow as pa

from mssql_cdc.tables.definitions import FACTS

_ARROW = {
    "STRING": pa.string(),
    "INT": pa.int32(),
    "BIGINT": pa.int64(),
    "DOUBLE": pa.float64(),
    "TIMESTAMP_NTZ": pa.timestamp("us"),
}
FACTS_SCHEMA = pa.schema([pa.field(c.name, _ARROW[c.type]) for c in FACTS])


def lsn(n: int) -> str:
    """LSN `n` as canonical text: 0x and 20 upper-case hex digits."""
    return f"0x{n:020X}"
