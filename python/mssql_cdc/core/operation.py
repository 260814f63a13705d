"""The values of the bronze `_operation` column: CDC's `__$operation` codes, plus the snapshot's 0.

SQL Server writes 1 to 4 into a change table; the library writes 0 into every row a snapshot
reads, which no change table holds. Each member equals its integer, so the column stays a plain
INT and a member compares equal to a value read back from Arrow, Spark or a Python row.
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["Operation"]


class Operation(IntEnum):
    """One row's `_operation`: the kind of change, or a snapshot row."""

    SNAPSHOT = 0  # a row a snapshot read: the table's image at the snapshot LSN
    DELETE = 1
    INSERT = 2
    UPDATE_BEFORE = 3  # an update's before-image
    UPDATE_AFTER = 4  # an update's after-image
