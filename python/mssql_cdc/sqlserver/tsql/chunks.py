"""The T-SQL of chunk planning (docs/snapshots.md, 'Over T-SQL'): counted integer buckets,
the key at a distance after a bound (optionally at or below a ceiling), the highest key, and the
table's row count from metadata.

Keyset bounds travel as server-made text and every comparison of keys happens on the server,
under the column's collation, so character and binary keys order as SQL Server orders them.

Integer arithmetic on key values happens in `decimal(38,0)`, so keys at the `bigint` limits
neither overflow nor round; bucket edges are computed exactly in Python.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mssql_cdc.options import KeyBound, quote_name, two_part_name
from mssql_cdc.sqlserver.metadata import TableColumn
from mssql_cdc.sqlserver.tsql.snapshot import bound_parts, key_text, key_type, range_pieces
from mssql_cdc.sqlserver.tsql.statements import PARAM, Statement, positive_int

__all__ = ["Buckets", "bucket_edges", "key_at", "key_buckets", "key_max", "row_count"]


@dataclass(frozen=True, slots=True)
class Buckets:
    """`[lo, hi)` cut into `n` integer intervals of equal width, the first `extra` one wider."""

    lo: int
    hi: int
    n: int

    @property
    def width(self) -> int:
        return (self.hi - self.lo) // self.n

    @property
    def extra(self) -> int:
        return (self.hi - self.lo) % self.n


def bucket_edges(buckets: Buckets) -> list[tuple[int, int]]:
    """The `n` intervals `[lo_j, hi_j)` in order; zero-width ones when `n` exceeds the span."""
    edges, start = [], buckets.lo
    for j in range(buckets.n):
        end = start + buckets.width + (1 if j < buckets.extra else 0)
        edges.append((start, end))
        start = end
    return edges


def key_buckets(
    source_schema: str, source_table: str, key: TableColumn, buckets: Buckets
) -> Statement:
    """Rows per non-empty bucket of one integer key, in one GROUP BY.

    The bucket of k: below the wider buckets' end `b = lo + extra * (width + 1)` it is
    `(k - lo) div (width + 1)`, else `extra + (k - b) div width`; divisions are of exact
    multiples (`x - x % w`), so no rounding can move a key to a neighbour.
    """
    positive_int("n", buckets.n)
    if buckets.hi <= buckets.lo:
        raise ValueError(f"bucket range [{buckets.lo}, {buckets.hi}) is empty")
    if key_type(key) is None or key.sql_type not in ("tinyint", "smallint", "int", "bigint"):
        raise ValueError(f"key column {key.name!r} is {key.sql_type}, not an integer type")
    n = min(buckets.n, buckets.hi - buckets.lo)  # every counted bucket is at least 1 wide
    exact = Buckets(buckets.lo, buckets.hi, n)
    wide, narrow = exact.width + 1, max(exact.width, 1)
    boundary = exact.lo + exact.extra * wide
    d = f"CONVERT(decimal(38,0), t.{quote_name(key.name, 'key column')})"
    dec = f"CONVERT(decimal(38,0), {PARAM})"
    below = f"(({d} - {dec}) - ({d} - {dec}) % {dec}) / {dec}"
    above = f"{dec} + (({d} - {dec}) - ({d} - {dec}) % {dec}) / {dec}"
    column = f"t.{quote_name(key.name, 'key column')}"
    return Statement(
        "SELECT b.j AS bucket, COUNT_BIG(*) AS row_count FROM (SELECT "
        f"CONVERT(decimal(38,0), CASE WHEN {d} < {dec} THEN {below} ELSE {above} END) AS j "
        f"FROM {two_part_name(source_schema, source_table)} AS t "
        f"WHERE {column} >= CAST({PARAM} AS {key.sql_type}) "
        f"AND {column} <= CAST({PARAM} AS {key.sql_type})) AS b GROUP BY b.j ORDER BY b.j;",
        tuple(
            str(v)
            for v in (
                boundary,
                *(exact.lo, exact.lo, wide, wide),
                *(exact.extra, boundary, boundary, narrow, narrow),
                exact.lo,
                exact.hi - 1,  # inclusive, so hi = MAX + 1 never overflows the key's type
            )
        ),
    )


def _key_texts(prefix: str, names: Sequence[str], keys: Sequence[TableColumn]) -> str:
    return ", ".join(
        f"{key_text(prefix + name, k)} AS [k{i}]"
        for i, (name, k) in enumerate(zip(names, keys, strict=True))
    )


def _at_most(
    refs: Sequence[str], keys: Sequence[TableColumn], upto: KeyBound
) -> tuple[str, list[str]] | None:
    """`key <= upto` as one condition: the pieces below `upto` or the key equal to it."""
    parts = bound_parts(upto, len(keys))
    if parts is None:
        return None
    pieces = range_pieces(refs, keys, parts, "<", inclusive=True)
    condition = " OR ".join(f"({c})" for c, _ in pieces)
    return f"({condition})", [p for _, values in pieces for p in values]


def key_at(
    source_schema: str,
    source_table: str,
    keys: Sequence[TableColumn],
    start: KeyBound,
    *,
    inclusive: bool,
    position: int,
    upto: KeyBound = None,
) -> Statement:
    """The key at 0-based `position` in key order among keys `>= start` (`> start` when not
    `inclusive`; all keys when `start` is None) and, when `upto` is given, `<= upto`, as
    lossless text; no row when there are fewer.

    Each seekable piece of the range reads at most `position + 1` keys (`TOP (n + 1)`), so the
    server never returns or sorts more than that many per piece.
    """
    if isinstance(position, bool) or not isinstance(position, int) or position < 0:
        raise ValueError(f"position must be an int >= 0 (got {position!r})")
    top = positive_int("position + 1", position + 1)
    table = two_part_name(source_schema, source_table)
    names = [quote_name(k.name, "key column") for k in keys]
    refs = [f"t.{name}" for name in names]
    parts = bound_parts(start, len(keys))
    pieces = (
        [("1 = 1", [])]
        if parts is None
        else range_pieces(refs, keys, parts, ">", inclusive=inclusive)
    )
    ceiling = _at_most(refs, keys, upto)
    selects, params = [], []
    for i, (condition, values) in enumerate(pieces):
        where = condition if ceiling is None else f"{condition} AND {ceiling[0]}"
        selects.append(
            f"SELECT * FROM (SELECT TOP ({top}) {', '.join(refs)} FROM {table} AS t "
            f"WHERE {where} ORDER BY {', '.join(refs)}) AS p{i}"
        )
        params += values + ([] if ceiling is None else ceiling[1])
    order = ", ".join(f"u.{name}" for name in names)
    return Statement(
        f"SELECT {_key_texts('v.', names, keys)} FROM (SELECT u.*, ROW_NUMBER() OVER "
        f"(ORDER BY {order}) AS r FROM ({' UNION ALL '.join(selects)}) AS u) AS v "
        f"WHERE v.r = {top};",
        tuple(params),
    )


def key_max(source_schema: str, source_table: str, keys: Sequence[TableColumn]) -> Statement:
    """The highest key in key order (NULL sorts first), as lossless text; no row when the
    table is empty. One backward index seek."""
    names = [quote_name(k.name, "key column") for k in keys]
    order = ", ".join(f"t.{name} DESC" for name in names)
    return Statement(
        f"SELECT TOP (1) {_key_texts('t.', names, keys)} "
        f"FROM {two_part_name(source_schema, source_table)} AS t ORDER BY {order};"
    )


def row_count(source_schema: str, source_table: str) -> Statement:
    """The table's row count from metadata (heap or clustered index partitions)."""
    return Statement(
        "SELECT SUM(p.rows) AS row_count FROM sys.partitions AS p "
        f"WHERE p.object_id = OBJECT_ID({PARAM}) AND p.index_id IN (0, 1);",
        (two_part_name(source_schema, source_table),),
    )
