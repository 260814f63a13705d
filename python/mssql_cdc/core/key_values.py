"""Key values as SQL Server orders them, for the few places that compare keys outside it.

A key bound travels as text the server (or the emulator) produced, or as the emulator's own
value; a key read from a change row or from Delta is a Python or Spark value of the column's
Spark type. Before Python compares the two they become one typed value per SQL type
(`typed_part`), and `sort_part` maps it to a value whose Python order is SQL Server's:

- `uniqueidentifier`: bytes 10-15, then 8-9, 6-7, 4-5 and 0-3 of its 16 bytes (the first three
  groups stored little-endian), as SqlGuid.CompareTo documents SQL Server's order;
- `datetimeoffset`: the UTC instant (naive text is UTC, as the library writes it);
- `date`, `datetime`, `datetime2`, `smalldatetime`: the date or naive time, any year 1-9999;
- `decimal`, `numeric`, `money`, `smallmoney`: `Decimal`; binary types: `bytes`.

Character keys are left as they are: their order is the column's collation's (decision 1330).
"""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime
from decimal import Decimal

__all__ = ["GUID_ORDER", "guid_order", "sort_part", "typed_part"]

_INSTANT = frozenset({"datetimeoffset"})
_TIMES = frozenset({"datetime", "datetime2", "smalldatetime"})
_EXACT = frozenset({"decimal", "numeric", "money", "smallmoney"})
_BINARY = frozenset({"binary", "varbinary", "timestamp", "rowversion"})
_INTEGER = frozenset({"bit", "tinyint", "smallint", "int", "bigint"})

GUID_ORDER = (10, 11, 12, 13, 14, 15, 8, 9, 6, 7, 4, 5, 0, 1, 2, 3)
"""The significance of a uniqueidentifier's 16 bytes (`uuid.UUID.bytes_le` order), highest
first: https://learn.microsoft.com/en-us/dotnet/framework/data/adonet/sql/comparing-guid-and-uniqueidentifier-values"""


def _base(sql_type: str | None) -> str:
    return (sql_type or "").split("(", 1)[0].strip().lower()


def guid_order(text: str) -> str:
    """A uniqueidentifier's text as hex in SQL Server's order of significance: two GUIDs
    compare as SQL Server compares them when these texts compare as Python strings."""
    raw = uuid.UUID(text).bytes_le
    return bytes(raw[i] for i in GUID_ORDER).hex().upper()


def _time(text: str) -> datetime:
    try:
        return datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"key bound {text!r} is not an ISO 8601 time") from None


def typed_part(value: object, sql_type: str | None) -> object:
    """`value` (a key part: server text, emulator value or a Spark row's value) as the Python
    value of its SQL type; values of other types, and None, are returned unchanged.

    Raises:
        ValueError: text that is not a value of the type.
    """
    base = _base(sql_type)
    if value is None:
        return None
    if base in _INSTANT:
        moment = _time(value) if isinstance(value, str) else value
        if isinstance(moment, datetime):
            aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
            return aware.astimezone(UTC)
        return moment
    if not isinstance(value, str):
        return value
    if base == "date":
        return date.fromisoformat(value.strip()[:10])
    if base in _TIMES:
        moment = _time(value)
        if moment.tzinfo is not None:
            moment = moment.astimezone(UTC).replace(tzinfo=None)
        return moment
    if base in _EXACT:
        return Decimal(value)
    if base in _BINARY and value[:2].lower() == "0x":
        return bytes.fromhex(value[2:])
    if base in _INTEGER:
        return int(value)
    if base == "uniqueidentifier":
        return str(uuid.UUID(value)).upper()
    return value


def sort_part(value: object, sql_type: str | None) -> object:
    """A key part as a value whose Python order is SQL Server's for its type (module
    docstring); None stays None (NULL sorts first, which callers handle)."""
    typed = typed_part(value, sql_type)
    if typed is not None and _base(sql_type) == "uniqueidentifier":
        return guid_order(str(typed))
    return typed
