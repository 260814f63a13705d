"""Bounds that cut a table's key order into ranges, found without sorting the table where the
server allows it (decisions 1412 and 1448).

A key whose first column is an integer is cut by one-row seeks: the column's extent
(`key_seeks`) in equal widths, and for a composite key the first whole key at or above each
cut. Another key is cut at the steps of its primary key's statistics histogram. Only a server
that shows no histogram is asked for NTILE tiles, which sort the whole table. Bounds are where
a range starts; the first range is open below and the last open above, so every row falls in
exactly one, rows written since the statistics were built included.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from mssql_cdc.options import KeyBound
from mssql_cdc.sqlserver.key_seeks import INTEGER_RANGES
from mssql_cdc.sqlserver.protocols import SnapshotReader

__all__ = ["integer_bounds", "key_bounds"]

_log = logging.getLogger("mssql_cdc.sqlserver.key_bounds")


def integer_bounds(low: int, high: int, n: int) -> list[int]:
    """`MIN + floor(i * (MAX - MIN + 1) / n)` for i = 1..n-1, duplicates dropped."""
    bounds: list[int] = []
    for i in range(1, n):
        b = low + (i * (high - low + 1)) // n
        if b > low and (not bounds or b != bounds[-1]):
            bounds.append(b)
    return bounds


def key_bounds(
    reader: SnapshotReader,
    source_schema: str,
    source_table: str,
    keys: Sequence[str],
    n: int,
    *,
    first_type: str | None,
) -> list[KeyBound]:
    """At most `n - 1` rising bounds over `keys` (`first_type`: the SQL type of the first key
    column); empty when the table has no row to cut or `n < 2`."""
    if n < 2 or not keys:
        return []
    if first_type in INTEGER_RANGES:
        extent = reader.key_extent(source_schema, source_table, keys[0])
        if extent is None:
            return []
        cuts = integer_bounds(extent[0], extent[1], n)
        if len(keys) == 1:
            return list(cuts)
        return list(reader.first_keys(source_schema, source_table, keys, cuts))
    bounds = reader.histogram_bounds(source_schema, source_table, keys, n)
    if bounds is None:
        _log.info(
            "no statistics histogram of [%s].[%s]'s primary key; cutting its key order by "
            "NTILE, which makes the server sort the whole table",
            source_schema,
            source_table,
        )
        bounds = reader.key_tiles(source_schema, source_table, keys, n)
    return list(bounds)
