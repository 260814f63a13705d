"""The lowest and highest value of an integer key column found by one-row seeks (decision 1412).

A backend gives `first_at_or_above(v)`: the smallest key value `>= v`, or None, which is one
index seek reading at most one row (`SELECT TOP (1) k ... WHERE k >= @v ORDER BY k`). The
lowest value is one such seek from the type's lowest value (NULLs sort below it and are left
out, as MIN leaves them out); the highest is found by bisection between the lowest and the
type's highest value, at most 64 seeks for a bigint. Only ascending seeks are used, so the plan
costs the same wherever the server can seek forward in the key's index.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["INTEGER_RANGES", "extent_by_seeks"]

INTEGER_RANGES = {
    "tinyint": (0, 255),
    "smallint": (-(2**15), 2**15 - 1),
    "int": (-(2**31), 2**31 - 1),
    "bigint": (-(2**63), 2**63 - 1),
}
"""Each integer type's lowest and highest value
(https://learn.microsoft.com/en-us/sql/t-sql/data-types/int-bigint-smallint-and-tinyint-transact-sql)."""


def extent_by_seeks(
    first_at_or_above: Callable[[int], int | None], sql_type: str
) -> tuple[int, int] | None:
    """The lowest and highest non-NULL value of an integer key column; None when it has none."""
    lowest, highest = INTEGER_RANGES[sql_type]
    low = first_at_or_above(lowest)
    if low is None:
        return None
    # A value at or above `known` exists (`known` itself); none is at or above `above`.
    known, above = low, highest + 1
    while above - known > 1:
        middle = (known + above) // 2
        found = first_at_or_above(middle)
        if found is None:
            above = middle
        elif middle <= found < above:
            known = found
        else:  # a server that answered outside the seek would make this loop forever
            raise ValueError(f"a seek for a key >= {middle} answered {found}")
    return low, known
