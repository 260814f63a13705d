"""The order of two snapshot key bounds, as far as Python can know it without the server.

SQL Server orders keys: strings by the column's collation, and decimals,
dates and binaries from the text they travel as. Python orders only what it knows exactly:
numbers, and NULL key parts, which sort first as in SQL Server. Two strings equal but for
trailing spaces are equal in every collation (= and < ignore trailing spaces:
https://learn.microsoft.com/en-us/troubleshoot/sql/database-design/sql-server-trailing-spaces);
two others are of unknown order here (decision 0620); `source` checks them once the key's
collation is known (decision 1332).
"""

from __future__ import annotations

from typing import Literal

__all__ = ["Part", "compare_keys", "part_kind"]

Part = str | int | float | None
"""One key part of a bound: None is a NULL key part, not an open end."""

Order = Literal[-1, 0, 1]


def part_kind(part: Part) -> Literal["number", "string", "null"]:
    """The kind a bound's part is ordered as: parts of one key column must share a kind."""
    if part is None:
        return "null"
    return "string" if isinstance(part, str) else "number"


def compare_keys(a: tuple[Part, ...], b: tuple[Part, ...]) -> Order | None:
    """Compare two bounds of one key lexicographically, NULL parts first.

    Returns:
        -1, 0 or 1 when the order is certain in every collation; None when it depends on the
        server (two different strings decide it).
    Raises:
        TypeError: a part is a number in one bound and a string in the other.
    """
    for x, y in zip(a, b, strict=True):
        order = _compare_parts(x, y)
        if order != 0:
            return order
    return 0


def _compare_parts(x: Part, y: Part) -> Order | None:
    if x is None or y is None:
        return 0 if x is y else (-1 if x is None else 1)
    if isinstance(x, str) and isinstance(y, str):
        return 0 if x.rstrip(" ") == y.rstrip(" ") else None
    if isinstance(x, str) or isinstance(y, str):
        raise TypeError("a number and a string cannot be ordered")
    return -1 if x < y else (1 if x > y else 0)
