"""The row digest both sides of a reconcile compute: one definition, decision 1100.

A row's text joins its compared columns, in the order given, with U+001F; a NULL field is the
single character U+0001 and a value is U+0002 followed by its canonical text:

| Spark type                    | canonical text                                |
|-------------------------------|-----------------------------------------------|
| TINYINT ... BIGINT            | decimal digits, `-` when negative             |
| BOOLEAN (SQL Server bit)      | `1` or `0`                                    |
| DECIMAL(p,s)                  | plain notation with exactly s decimals        |
| STRING                        | the value itself                              |
| DATE                          | `yyyy-mm-dd`                                  |
| TIMESTAMP_NTZ, TIMESTAMP      | `yyyy-mm-dd hh:mm:ss.ffffff`                  |

The row's digest is the first 8 bytes of SHA-256 over the text's UTF-16LE bytes, read as an
unsigned big-endian integer; a tile's digest is the sum of its rows' digests modulo 2**64, so
it does not depend on the order rows are read in.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal

__all__ = [
    "DIGESTIBLE",
    "MODULUS",
    "NULL_FIELD",
    "SEPARATOR",
    "VALUE_MARK",
    "TileDigest",
    "digestible",
    "row_digest",
    "row_text",
    "value_text",
]

MODULUS = 2**64
SEPARATOR = "\x1f"
NULL_FIELD = "\x01"
VALUE_MARK = "\x02"
_INTEGERS = ("TINYINT", "SMALLINT", "INT", "BIGINT")
DIGESTIBLE = (*_INTEGERS, "BOOLEAN", "DECIMAL", "STRING", "DATE", "TIMESTAMP_NTZ", "TIMESTAMP")


def digestible(spark_type: str) -> bool:
    """Whether a column of this Spark type (as `simpleString().upper()`) has a canonical text."""
    return spark_type.split("(", 1)[0].strip().upper() in DIGESTIBLE


@dataclass(frozen=True, slots=True)
class TileDigest:
    """A key range's row count and digest; equal ranges have equal digests."""

    rows: int
    digest: int

    def plus(self, other: TileDigest) -> TileDigest:
        return TileDigest(self.rows + other.rows, (self.digest + other.digest) % MODULUS)

    def minus(self, other: TileDigest) -> TileDigest:
        return TileDigest(self.rows - other.rows, (self.digest - other.digest) % MODULUS)

    @classmethod
    def of(cls, digests: Iterable[int]) -> TileDigest:
        rows = 0
        total = 0
        for d in digests:
            rows += 1
            total += d
        return cls(rows, total % MODULUS)


def value_text(value: object) -> str:
    """The canonical text of one non-NULL value, as Python reads it from Arrow.

    Raises:
        TypeError: a value of a type without a canonical text (float, binary, ...).
    """
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, str):
        return value
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S.%f")
    if isinstance(value, date):
        return value.isoformat()
    raise TypeError(f"no canonical text for a {type(value).__name__} value")


def row_text(values: Sequence[object]) -> str:
    """The text a row's digest is taken of (its values in the compared columns' order)."""
    return SEPARATOR.join(NULL_FIELD if v is None else VALUE_MARK + value_text(v) for v in values)


def row_digest(values: Sequence[object]) -> int:
    """The row's digest: the first 8 bytes of SHA-256 of `row_text` in UTF-16LE, unsigned."""
    raw = hashlib.sha256(row_text(values).encode("utf-16-le")).digest()
    return int.from_bytes(raw[:8], "big")
