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

- character types: by the column's collation, carried in the type as `nvarchar COLLATE <name>`
  (`key_collation`): trailing spaces never count; a `_BIN2` collation then orders by code
  point, a `_CI_AS` one by the letters without case, a `_CS_AS` one by the letters without
  case and then by case, lower case first (decision 1332). Only letters, digits and spaces
  have that order in every modelled collation; a key with other characters (or an unknown
  collation) is refused with a ValueError, its order being the server's alone.

A `time`, `datetime2` or `datetimeoffset` key of scale 7 keeps 100 ns, Spark's times keep
microseconds: held as a Spark time, two source keys 100 ns apart are one key, so every place
that keys rows outside the server refuses it (`check_time_key`, decision 1343). Declared
STRING, a `datetime2(7)` or `time(7)` key is its fixed-width text, which orders and compares as
the value (`text_key` names it `datetime2(7) AS TEXT`, which `typed_part` keeps as text); a
`datetimeoffset(7)` text carries its offset, so its order is not the instant's, and it is
refused as a STRING key too (decision 1344). The source records each captured column's SQL
type in its field metadata under `SQL_TYPE_KEY`, and bronze in a table property (decision
1343).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from decimal import Decimal
from typing import Any

from mssql_cdc.errors import ConfigError

__all__ = [
    "CHARACTER_TYPES",
    "GUID_ORDER",
    "SEVEN_DIGIT_TIMES",
    "SQL_TYPE_KEY",
    "Collation",
    "UnorderedKeyError",
    "check_time_key",
    "check_time_keys",
    "guid_order",
    "key_collation",
    "sort_part",
    "text_key",
    "time_scale",
    "typed_part",
    "with_collation",
]

_INSTANT = frozenset({"datetimeoffset"})
SEVEN_DIGIT_TIMES = frozenset({"time", "datetime2", "datetimeoffset"})
"""The types that keep 100 ns: at scale 7 two keys less than 1 us apart are one in Spark."""
_AS_TEXT = " AS TEXT"
SQL_TYPE_KEY = "mssql_cdc.sql_type"
"""The StructField metadata key under which the source records a column's SQL type, e.g.
`datetime2(7)` (bronze's Delta schema keeps it)."""
_TIMES = frozenset({"datetime", "datetime2", "smalldatetime"})
_EXACT = frozenset({"decimal", "numeric", "money", "smallmoney"})
_BINARY = frozenset({"binary", "varbinary", "timestamp", "rowversion"})
_INTEGER = frozenset({"bit", "tinyint", "smallint", "int", "bigint"})

GUID_ORDER = (10, 11, 12, 13, 14, 15, 8, 9, 6, 7, 4, 5, 0, 1, 2, 3)
"""The significance of a uniqueidentifier's 16 bytes (`uuid.UUID.bytes_le` order), highest
first: https://learn.microsoft.com/en-us/dotnet/framework/data/adonet/sql/comparing-guid-and-uniqueidentifier-values"""


CHARACTER_TYPES = frozenset({"char", "varchar", "nchar", "nvarchar", "text", "ntext"})
_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ")
_SWAP = str.maketrans(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
)


def _base(sql_type: str | None) -> str:
    words = (sql_type or "").split("(", 1)[0].split()
    return words[0].lower() if words else ""


class UnorderedKeyError(ValueError):
    """A character key whose order under its linguistic collation only SQL Server knows."""


@dataclass(frozen=True, slots=True)
class Collation:
    """How a character key compares outside the server.

    `case_sensitive` and `binary` come from the name's suffix (`_CS_AS`, `_BIN2`); trailing
    spaces never count under any of them:
    https://learn.microsoft.com/en-us/troubleshoot/sql/database-design/sql-server-trailing-spaces
    """

    name: str
    case_sensitive: bool
    binary: bool

    def sort_key(self, text: str) -> object:
        """`text` as a value whose Python order and equality are the collation's.

        Raises:
            UnorderedKeyError: under a linguistic collation, a character other than an ASCII
                letter, digit or space, whose order only the server knows.
        """
        trimmed = text.rstrip(" ")
        if self.binary:
            return trimmed
        odd = sorted(set(trimmed) - _PLAIN)
        if odd:
            raise UnorderedKeyError(
                f"key {text!r} holds {''.join(odd)!r}, whose order under collation {self.name} "
                f"only SQL Server knows"
            )
        if not self.case_sensitive:
            return trimmed.lower()
        return (trimmed.lower(), trimmed.translate(_SWAP))


def key_collation(sql_type: str | None) -> Collation | None:
    """The collation of a character key whose type is written `nvarchar(20) COLLATE <name>`;
    None for other types and for a character type without one (compared as Python does).

    Raises:
        ValueError: a collation that is neither case-insensitive, case-sensitive and
            accent-sensitive (`_CI_AS`, `_CS_AS`) nor binary (`_BIN2`).
    """
    if _base(sql_type) not in CHARACTER_TYPES:
        return None
    words = (sql_type or "").split()
    if len(words) < 3 or words[-2].upper() != "COLLATE":
        return None
    name = words[-1]
    upper = name.upper()
    if upper.endswith("_BIN2"):
        return Collation(name, case_sensitive=True, binary=True)
    if upper.endswith("_CI_AS"):
        return Collation(name, case_sensitive=False, binary=False)
    if upper.endswith("_CS_AS"):
        return Collation(name, case_sensitive=True, binary=False)
    raise ValueError(
        f"collation {name} is not one whose comparisons the library can repeat outside "
        f"SQL Server (a _CI_AS, _CS_AS or _BIN2 collation)"
    )


def with_collation(sql_type: str, collation: str | None) -> str:
    """A character column's type with its collation, as `key_collation` reads it."""
    if collation and _base(sql_type) in CHARACTER_TYPES:
        return f"{sql_type} COLLATE {collation}"
    return sql_type


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
    if (sql_type or "").endswith(_AS_TEXT):
        return _seven_digit_text(value)
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
    collation = key_collation(sql_type)
    if collation is not None and isinstance(typed, str):
        return collation.sort_key(typed)
    return typed


def time_scale(sql_type: str | None) -> int | None:
    """The fractional digits of a `time`, `datetime2` or `datetimeoffset` type (`datetime2(3)`:
    3; no scale written: 7, SQL Server's default); None for other types.
    https://learn.microsoft.com/en-us/sql/t-sql/data-types/datetime2-transact-sql"""
    if _base(sql_type) not in SEVEN_DIGIT_TIMES:
        return None
    _, _, rest = (sql_type or "").partition("(")
    digits = rest.split(")", 1)[0].strip()
    return int(digits) if digits.isdigit() else 7


def text_key(sql_type: str | None, spark_type: str | None) -> str | None:
    """The type a key part compares by: a `time`/`datetime2` key of scale 7 held as a Spark
    STRING compares as its text (`datetime2(7) AS TEXT`; `typed_part` keeps text and writes a
    Python time as that text), not parsed to microseconds; others keep `sql_type`."""
    if (spark_type or "").lower() == "string" and time_scale(sql_type) == 7:
        return f"{sql_type}{_AS_TEXT}"
    return sql_type


def _seven_digit_text(value: object) -> str:
    """A key part of a seven-digit time held as text: text as it is, a Python value (an
    in-process emulator's bound, microseconds) as CONVERT writes it, the seventh digit 0."""
    if isinstance(value, datetime):
        naive = value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value
        return naive.isoformat(sep=" ", timespec="microseconds") + "0"
    if isinstance(value, time):
        return value.isoformat(timespec="microseconds") + "0"
    return str(value)


def check_time_key(caller: str, column: str, sql_type: str | None, spark_type: str) -> None:
    """Refuse a key column whose values Spark cannot keep apart or order (module docstring).

    `spark_type` is the Spark type's name as `DataType.typeName()` gives it (`timestamp_ntz`,
    `string`).

    Raises:
        ConfigError: a time key of scale 7 held as a Spark time, or a `datetimeoffset(7)` key
            held as a STRING; names the column, its SQL type and the remedies.
    """
    scale = time_scale(sql_type)
    if scale is None or scale < 7:
        return
    base = _base(sql_type)
    held = spark_type.lower()
    if held == "string" and base != "datetimeoffset":
        return
    if held == "string":
        raise ConfigError(
            f"{caller}: key column {column} is {base}({scale}) declared as a STRING, whose text "
            "carries its offset, so text order is not the order of the instants SQL Server "
            f"compares; make it {base}(6) and keep it a TIMESTAMP, or key the table by "
            "another column"
        )
    raise ConfigError(
        f"{caller}: key column {column} is {base}({scale}), whose keys 100 ns apart are two "
        "keys on the server but one in Spark, which keeps microseconds; declare "
        f"{column} as a STRING with the columns option (its text orders and compares as the "
        f"value), or make it {base}(6)"
    )


def check_time_keys(
    caller: str,
    keys: Sequence[str],
    fields: Iterable[Any],
    recorded: Mapping[str, str] | None = None,
) -> None:
    """`check_time_key` for each key column of a Spark schema's `fields` whose SQL type is
    known: from the field's metadata (`SQL_TYPE_KEY`), else from `recorded` (a bronze table's
    record of its columns' types). A column of unknown type (a bronze written before the source
    recorded types) is not checked. Reads no rows.

    Raises:
        ConfigError: as `check_time_key`, for the first key column it refuses.
    """
    by_name = {f.name: f for f in fields}
    for key in keys:
        field = by_name.get(key)
        sql_type = None if field is None else (field.metadata or {}).get(SQL_TYPE_KEY)
        if not isinstance(sql_type, str):
            sql_type = (recorded or {}).get(key)
        if field is not None and isinstance(sql_type, str):
            check_time_key(caller, key, sql_type, field.dataType.typeName())
