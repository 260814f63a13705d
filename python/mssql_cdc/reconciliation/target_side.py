"""The target side of a reconcile in Spark: silver's rows, or bronze's latest image per key.

The row digest is `core.row_digest`'s, built from Spark's functions so it is computed where the
rows are: the fields' canonical text joined by U+001F, `encode(..., 'UTF-16LE')`, `sha2`, and
the first 16 hex digits as an unsigned integer. A tile's digest sums them per range: the 16 hex
digits are taken as three bigints of 24, 20 and 20 bits, each summed as a bigint (exact up to
2**39 rows a tile) and recombined in Python modulo 2**64, the same sum as over the whole
integers, without a `decimal(20,0)` per row (decision 1433). The first question (every tile's
count and digest) is one Spark job over the target as read; only when a tile differs, so that
narrowing asks more, are the keys and digests cached, and only where the session allows it: a
session that refuses `cache()` (serverless compute) answers each question by reading the
target again (decision 1377). A sampled reconcile keeps the rows whose
key digest, the row digest over the key columns alone, is below the sample's bound (decision
1376), as the source side does.

Rows are put in the tile the source put them in: bounds are compared in SQL Server's order for
the key column's SQL type, a GUID by its byte groups (`_guid_order`), a date or time bound
given as server text as the value it names (decision 1331), a character key by its collation
as `core.Collation` models it (decision 1332): trailing spaces dropped, then the lower-cased
text and, case-sensitive, the text with its case swapped; a key holding a character other than
a letter, digit or space under a linguistic collation is refused.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from itertools import pairwise
from typing import TYPE_CHECKING

from mssql_cdc.core import (
    MODULUS,
    NULL_FIELD,
    SEPARATOR,
    VALUE_MARK,
    Collation,
    TileDigest,
    guid_order,
    key_collation,
    typed_part,
)
from mssql_cdc.errors import ConfigError
from mssql_cdc.options import KeyBound
from mssql_cdc.reconciliation.tile_narrowing import Key, KeyRange, KeyTypes, as_key, key_order
from mssql_cdc.tables import quote_identifier

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import StructField

__all__ = ["TargetRows", "key_below", "row_digest_column"]

log = logging.getLogger(__name__)

_TILE = "__mssql_cdc_tile"
# The row digest's 16 hex digits as three bigints: (column, first hex digit, digits, shift).
_PARTS = (("__mssql_cdc_d0", 1, 6, 40), ("__mssql_cdc_d1", 7, 5, 20), ("__mssql_cdc_d2", 12, 5, 0))


def _text(field: StructField, time_zone: str) -> Column:
    from pyspark.sql import functions as F

    c = F.col(quote_identifier(field.name))
    base = field.dataType.simpleString().upper().split("(", 1)[0]
    if base == "BOOLEAN":
        return F.when(c, F.lit("1")).otherwise(F.lit("0"))
    if base == "DATE":
        return F.date_format(c, "yyyy-MM-dd")
    if base == "TIMESTAMP_NTZ":
        return F.date_format(c, "yyyy-MM-dd HH:mm:ss.SSSSSS")
    if base == "TIMESTAMP":  # an instant; the source side gives it in UTC
        return F.date_format(F.to_utc_timestamp(c, time_zone), "yyyy-MM-dd HH:mm:ss.SSSSSS")
    return c.cast("string")  # integers, text, and decimals (plain, with all their scale)


def _sha256_hex(fields: Sequence[StructField], time_zone: str) -> Column:
    """SHA-256, in hex, of the UTF-16LE bytes of the fields' canonical text joined by U+001F."""
    from pyspark.sql import functions as F

    parts = [
        F.when(F.col(quote_identifier(f.name)).isNull(), F.lit(NULL_FIELD)).otherwise(
            F.concat(F.lit(VALUE_MARK), _text(f, time_zone))
        )
        for f in fields
    ]
    return F.sha2(F.encode(F.concat_ws(SEPARATOR, *parts), "UTF-16LE"), 256)


def row_digest_column(fields: Sequence[StructField], *, time_zone: str) -> Column:
    """The row digest over `fields`, in their order, as `decimal(20,0)`: the fields'
    canonical text joined by U+001F, SHA-256 of its UTF-16LE bytes, the first 16 hex digits as
    an unsigned integer (the module docstring)."""
    from pyspark.sql import functions as F

    hexed = _sha256_hex(fields, time_zone)
    return F.conv(F.substring(hexed, 1, 16), 16, 10).cast("decimal(20,0)")


def _digest_parts(hexed: Column) -> list[Column]:
    """The row digest as three bigints (`_PARTS`): its bits 63-40, 39-20 and 19-0."""
    from pyspark.sql import functions as F

    return [
        F.conv(F.substring(hexed, first, digits), 16, 10).cast("bigint").alias(name)
        for name, first, digits, _ in _PARTS
    ]


def _joined(parts: Sequence[int | None]) -> int:
    """The integer three `_PARTS` values (or their sums) make, modulo 2**64."""
    total = sum((p or 0) << shift for p, (*_, shift) in zip(parts, _PARTS, strict=True))
    return total % MODULUS


def _guid_order(c: Column) -> Column:
    """A uniqueidentifier's text rearranged as `core.guid_order` does: its hex in SQL Server's
    order of significance (bytes 10-15, 8-9, then 6-7, 4-5 and 0-3 each stored little-endian)."""
    from pyspark.sql import functions as F

    text = F.upper(c)
    # 1-based positions in "00112233-4455-6677-8899-AABBCCDDEEFF" of each byte, by significance
    starts = (25, 27, 29, 31, 33, 35, 20, 22, 17, 15, 12, 10, 7, 5, 3, 1)
    return F.concat(*[F.substring(text, p, 2) for p in starts])


_LOWER = "abcdefghijklmnopqrstuvwxyz"
_UPPER = _LOWER.upper()


def _levels(k: Column, collation: Collation) -> list[Column]:
    """A character key as the Spark values `Collation.sort_key` gives in Python: trailing
    spaces dropped; then lower case (and, case-sensitive, the text with its case swapped so
    lower case sorts first), or the text itself under a binary collation."""
    from pyspark.sql import functions as F

    trimmed = F.rtrim(k)
    if collation.binary:
        return [trimmed]
    levels = [F.lower(trimmed)]
    if collation.case_sensitive:
        levels.append(F.translate(trimmed, _LOWER + _UPPER, _UPPER + _LOWER))
    return levels


def _ordered(k: Column, sql_type: str | None) -> list[Column]:
    """A key column as Spark values whose order is SQL Server's for its type."""
    if (sql_type or "").lower().startswith("uniqueidentifier"):
        return [_guid_order(k)]
    collation = key_collation(sql_type)
    return [k] if collation is None else _levels(k, collation)


def _part_below(k: Column, literal: object, sql_type: str | None) -> tuple[Column, Column]:
    """(k < literal, k = literal) for a non-NULL literal, in SQL Server's order."""
    from pyspark.sql import functions as F

    typed = typed_part(literal, sql_type)
    collation = key_collation(sql_type)
    if (sql_type or "").lower().startswith("uniqueidentifier"):
        pairs = [(_guid_order(k), F.lit(guid_order(str(typed))))]
    elif collation is not None and isinstance(typed, str):
        value = collation.sort_key(typed)
        values = list(value) if isinstance(value, tuple) else [value]
        pairs = [(c, F.lit(v)) for c, v in zip(_levels(k, collation), values, strict=True)]
    else:
        pairs = [(k, F.lit(typed))]
    less, same = F.lit(False), F.lit(True)
    for column, value in pairs:
        less = less | (same & F.coalesce(column < value, F.lit(False)))
        same = same & F.coalesce(column == value, F.lit(False))
    return k.isNull() | less, same


def key_below(keys: Sequence[Column], bound: KeyBound, types: KeyTypes = ()) -> Column:
    """key < bound, column by column with NULLs first, in SQL Server's order for the key
    columns' SQL types (`types`, one per key column; () compares values as Spark does)."""
    from pyspark.sql import functions as F

    values = as_key(bound)
    kinds = list(types) or [None] * len(values)
    out = F.lit(False)
    equal_so_far = F.lit(True)
    for k, v, t in zip(keys, values, kinds, strict=True):
        if v is None:
            less, same = F.lit(False), k.isNull()
        else:
            less, same = _part_below(k, v, t)
        out = out | (equal_so_far & less)
        equal_so_far = equal_so_far & same
    return out


def _within(keys: Sequence[Column], key_range: KeyRange, types: KeyTypes = ()) -> Column:
    from pyspark.sql import functions as F

    lo, hi = key_range
    condition = F.lit(True)
    if lo is not None:
        condition = condition & ~key_below(keys, lo, types)
    if hi is not None:
        condition = condition & key_below(keys, hi, types)
    return condition


def _disjoint(ranges: Sequence[KeyRange], types: KeyTypes = ()) -> bool:
    """Whether the ranges, in key order, never overlap (tiles and their halves never do)."""

    def order(bound: KeyBound) -> tuple[tuple[bool, object], ...]:
        return key_order(as_key(bound), types)

    ordered = sorted(ranges, key=lambda r: (r[0] is not None, order(r[0])))
    for (_, hi), (lo, _) in pairwise(ordered):
        if hi is None or lo is None or order(lo) < order(hi):
            return False
    return True


def _tile_of(keys: Sequence[Column], ranges: Sequence[KeyRange], types: KeyTypes = ()) -> Column:
    """The index of the range holding a row's key, NULL when none does.

    The ranges' bounds cut the key space into segments; a row finds its segment by binary
    search (about log2 of the bounds comparisons), then its range by a literal lookup. A chain
    of one test per range costs every row all of them and, past a few dozen ranges, outgrows
    Spark's generated code, which then runs interpreted (B8 in bench/REPORT.md).
    """
    from pyspark.sql import functions as F

    if not _disjoint(ranges, types):  # overlapping: the first range holding the key, one by one
        tile = F.lit(None).cast("int")
        for i, key_range in reversed(list(enumerate(ranges))):
            tile = F.when(_within(keys, key_range, types), F.lit(i)).otherwise(tile)
        return tile
    cuts: dict[tuple[tuple[bool, object], ...], KeyBound] = {}
    for bound in (b for r in ranges for b in r if b is not None):
        cuts.setdefault(key_order(as_key(bound), types), bound)
    order = sorted(cuts)
    position = {k: i for i, k in enumerate(order)}
    bounds = [cuts[k] for k in order]
    owner: list[int | None] = [None] * (len(bounds) + 1)  # segment s: [bounds[s-1], bounds[s])
    for i, (lo, hi) in enumerate(ranges):
        first = 0 if lo is None else position[key_order(as_key(lo), types)] + 1
        last = len(bounds) if hi is None else position[key_order(as_key(hi), types)]
        for s in range(first, last + 1):
            owner[s] = i

    def segment(first: int, last: int) -> Column:
        if first == last:
            return F.lit(first)
        middle = (first + last + 1) // 2  # the first segment at or above bounds[middle - 1]
        below = key_below(keys, bounds[middle - 1], types)
        return F.when(below, segment(first, middle - 1)).otherwise(segment(middle, last))

    lookup = F.array(*[F.lit(o).cast("int") for o in owner])
    return F.element_at(lookup, segment(0, len(bounds)) + 1)


def _instants(key: Key, types: KeyTypes) -> Key:
    """A collected key with each datetimeoffset part (a TIMESTAMP, which PySpark gives as a
    naive time in this process's zone) as an aware UTC time, the instant the source names."""
    return tuple(
        v.astimezone(UTC)
        if isinstance(v, datetime) and v.tzinfo is None and (t or "").startswith("datetimeoffset")
        else v
        for v, t in zip(key, list(types) or [None] * len(key), strict=True)
    )


class TargetRows:
    """A TileSide over a DataFrame of target rows (one per key): its first question read as is,
    the rest (narrowing) over a cached copy where the session allows caching (module
    docstring)."""

    def __init__(
        self,
        rows: DataFrame,
        *,
        keys: Sequence[str],
        fields: Sequence[StructField],
        time_zone: str,
        key_types: KeyTypes = (),
        sample_below: int | None = None,
    ) -> None:
        from pyspark.sql import functions as F

        self._types = tuple(key_types)
        self._names = [f"__mssql_cdc_k{i}" for i in range(len(keys))]
        if sample_below is not None:
            by_name = {f.name: f for f in fields}
            key_digest = row_digest_column([by_name[k] for k in keys], time_zone=time_zone)
            rows = rows.where(key_digest < F.lit(sample_below).cast("decimal(20,0)"))
        self._rows = rows.select(
            *[F.col(quote_identifier(k)).alias(n) for k, n in zip(keys, self._names, strict=True)],
            *_digest_parts(_sha256_hex(fields, time_zone)),
        )
        self._questions = 0  # questions asked of the rows so far
        self._cached = False  # whether self._rows is a cached copy
        self._refuse_unordered(keys)

    def _frame(self) -> DataFrame:
        """The rows, for one more question. The first reads them as they are; narrowing asks
        more, so at the second they are cached once, unless the session refuses caching, and
        then every question reads them again."""
        self._questions += 1
        if self._questions == 2:
            try:
                self._rows = self._rows.cache()
                self._cached = True
            except Exception as e:  # noqa: BLE001 - any refusal leaves the rows as they were
                log.info("reconcile: the session refused to cache the target, read again: %s", e)
        return self._rows

    def _refuse_unordered(self, keys: Sequence[str]) -> None:
        """Refuse a character key holding a character whose order under its linguistic
        collation only the server knows (`core.Collation.sort_key`)."""
        from pyspark.sql import functions as F

        for name, column, sql_type in zip(keys, self._names, self._types, strict=False):
            collation = key_collation(sql_type)
            if collation is None or collation.binary:
                continue
            odd = (
                self._rows.where(F.rtrim(F.col(column)).rlike("[^A-Za-z0-9 ]"))
                .select(F.col(column))
                .limit(1)
                .collect()
            )
            if odd:
                raise ConfigError(
                    f"reconcile: key column {name} holds {odd[0][0]!r}, whose order under "
                    f"collation {collation.name} only SQL Server knows (the library orders "
                    "letters, digits and spaces only); reconcile a table whose character "
                    "keys hold only those, or give the key column a _BIN2 collation"
                )

    def _keys(self) -> list[Column]:
        from pyspark.sql import functions as F

        return [F.col(n) for n in self._names]

    def digests(self, ranges: Sequence[KeyRange]) -> list[TileDigest]:
        from pyspark.sql import functions as F

        tile = _tile_of(self._keys(), ranges, self._types)
        names = [name for name, *_ in _PARTS]
        found = {
            int(r[_TILE]): TileDigest(int(r["n"]), _joined([r[f"s{n}"] for n in names]))
            for r in self._frame()
            .select(tile.alias(_TILE), *names)
            .where(F.col(_TILE).isNotNull())
            .groupBy(_TILE)
            .agg(F.count(F.lit(1)).alias("n"), *[F.sum(n).alias(f"s{n}") for n in names])
            .collect()
        }
        return [found.get(i, TileDigest(0, 0)) for i in range(len(ranges))]

    def keyed(self, key_range: KeyRange) -> dict[Key, int]:
        rows = self._frame().where(_within(self._keys(), key_range, self._types)).collect()
        return {
            _instants(tuple(r[n] for n in self._names), self._types): _joined(
                [r[name] for name, *_ in _PARTS]
            )
            for r in rows
        }

    def key_at(self, key_range: KeyRange, position: int) -> KeyBound:
        keys = self._keys()
        ordered = [
            level
            for k, t in zip(keys, self._types or [None] * len(keys), strict=True)
            for level in _ordered(k, t)
        ]
        rows = (
            self._frame()
            .where(_within(keys, key_range, self._types))
            .orderBy(*[k.asc_nulls_first() for k in ordered])
            .limit(position + 1)
            .collect()
        )
        if len(rows) <= position:
            return None
        values = _instants(tuple(rows[position][n] for n in self._names), self._types)
        return values[0] if len(values) == 1 else values  # type: ignore[return-value]

    def release(self) -> None:
        """Drop the cached copy, if there is one."""
        if self._cached:
            self._rows.unpersist()
            self._cached = False
