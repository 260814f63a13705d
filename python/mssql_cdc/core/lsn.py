"""LSNs as canonical text ("0x" + 20 upper-case hex digits), with exact arithmetic in C++.

Text order of canonical LSNs is LSN order, so they compare, sort and serialise as plain strings.
"""

from __future__ import annotations

from typing import NewType

import mssql_cdc._native as _native

__all__ = ["ZERO", "Lsn", "compare", "decrement", "fields", "from_fields", "increment", "normalize"]

Lsn = NewType("Lsn", str)
"""A canonical LSN text: "0x" followed by 20 upper-case hex digits."""

ZERO = Lsn(_native.lsn.zero())


def normalize(text: str) -> Lsn:
    """Return the canonical form of `text` ("0x" + 1..20 hex digits, or 20 digits bare).

    Raises:
        ValueError: `text` is not an LSN; the message quotes it.
    """
    return Lsn(_native.lsn.normalize(text))


def increment(lsn: str) -> Lsn:
    """Return `lsn` + 1. Raises OverflowError at the maximum LSN."""
    return Lsn(_native.lsn.increment(lsn))


def decrement(lsn: str) -> Lsn:
    """Return `lsn` - 1. Raises OverflowError at the zero LSN."""
    return Lsn(_native.lsn.decrement(lsn))


def compare(a: str, b: str) -> int:
    """Return -1, 0 or 1 as `a` is below, equal to or above `b` (any accepted spelling)."""
    return _native.lsn.compare(a, b)


def fields(lsn: str) -> tuple[int, int, int]:
    """Return the (vlf, block, slot) fields of `lsn`."""
    return _native.lsn.fields(lsn)


def from_fields(vlf: int, block: int, slot: int) -> Lsn:
    """Return the canonical LSN of the three fields."""
    return Lsn(_native.lsn.from_fields(vlf, block, slot))
