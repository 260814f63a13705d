"""The T-SQL of snapshot reads: one-row key seeks, NTILE key tiles and rows of a key range.

Key bounds travel as text the server produced losslessly and come back as parameters under
`CAST(? AS <column type>)` (with the column's collation for character keys), so every
comparison happens on the server. A range `lo <= key < hi` over a composite key is a
`UNION ALL` of seekable pieces, one per key prefix; NULL sorts first, as in SQL Server.
`first_key_from` is the one-row seek that plans integer-led keys (decision 1412);
`key_statistics` and `stats_histogram` read the primary key's statistics histogram, and
`first_key_at` seeks the smallest key at or above a histogram bound, for other keys (decision 1448).
"""

from __future__ import annotations

from collections.abc import Sequence

from mssql_cdc.options import KeyBound, check_collation, quote_name, two_part_name
from mssql_cdc.sqlserver.metadata import ReadColumn, TableColumn
from mssql_cdc.sqlserver.tsql.statements import PARAM, Statement, column_expression, positive_int

__all__ = [
    "INTEGER_TYPES",
    "bound_parts",
    "first_key_at",
    "first_key_from",
    "key_statistics",
    "key_text",
    "key_tiles",
    "key_type",
    "range_pieces",
    "stats_histogram",
    "table_rows",
]

_PLAIN = frozenset(
    {
        "bit", "tinyint", "smallint", "int", "bigint", "real", "float", "money", "smallmoney",
        "date", "datetime", "smalldatetime", "uniqueidentifier",
    }
)  # fmt: skip
_SCALED = frozenset({"datetime2", "time", "datetimeoffset"})
_EXACT = frozenset({"decimal", "numeric"})
_SIZED = frozenset({"char", "varchar", "binary", "varbinary"})
_WIDE = frozenset({"nchar", "nvarchar"})
_BINARY = frozenset({"binary", "varbinary"})
_CHARACTER = frozenset({"char", "varchar", "nchar", "nvarchar"})
INTEGER_TYPES = frozenset({"tinyint", "smallint", "int", "bigint"})


def key_type(column: TableColumn) -> str | None:
    """The SQL type text a bound is cast to, from a fixed list; None for a type with no
    lossless text form (sql_variant, xml, CLR types, LOBs), which cannot cut partitions."""
    name = column.sql_type.lower()
    if name in _PLAIN:
        return name
    if name in _SCALED:
        return f"{name}({int(column.scale)})"
    if name in _EXACT:
        return f"{name}({int(column.precision)},{int(column.scale)})"
    if name in _SIZED | _WIDE:
        if column.max_length == -1:
            return None  # (max) types are LOBs
        length = column.max_length // 2 if name in _WIDE else column.max_length
        return f"{name}({int(length)})"
    return None


def key_text(ref: str, column: TableColumn) -> str:
    name = column.sql_type.lower()
    if name in _BINARY:
        return f"CONVERT(varchar(max), {ref}, 1)"  # 0x hex
    if name in ("datetime", "smalldatetime"):
        return f"CONVERT(nvarchar(64), {ref}, 126)"  # ISO 8601; the default style drops seconds
    if name in ("float", "real"):
        return f"CONVERT(varchar(32), {ref}, 3)"  # 17 (9) significant digits
    if name in ("money", "smallmoney"):
        return f"CONVERT(varchar(32), {ref}, 2)"  # all four decimals
    return f"CONVERT(nvarchar(4000), {ref})"


def _param(column: TableColumn) -> str:
    cast_to = key_type(column)
    if cast_to is None:
        raise ValueError(f"column {column.name!r} of type {column.sql_type} cannot bound a range")
    if column.sql_type.lower() in _BINARY:
        return f"CONVERT({cast_to}, {PARAM}, 1)"
    text = f"CAST({PARAM} AS {cast_to})"
    if column.sql_type.lower() in _CHARACTER and column.collation:
        text += f" COLLATE {check_collation(column.collation)}"
    return text


def bound_parts(bound: KeyBound, width: int) -> tuple[str | None, ...] | None:
    """A bound as one text value (or None for NULL) per key column; None for an open end."""
    if bound is None:
        return None
    parts = bound if isinstance(bound, tuple) else (bound,)
    if len(parts) != width:
        raise ValueError(f"a bound has {len(parts)} key parts for a key of {width} columns")
    return tuple(None if p is None else str(p) for p in parts)


def first_key_from(
    source_schema: str, source_table: str, keys: Sequence[TableColumn], value: int
) -> Statement:
    """The smallest key (as lossless text, `k0`, `k1`, ...) whose first column, an integer, is
    `>= value`: one index seek reading at most one row; no row when none is."""
    if keys[0].sql_type.lower() not in INTEGER_TYPES:
        raise ValueError(f"key column {keys[0].name!r} is {keys[0].sql_type}, not an integer type")
    refs = [f"t.{quote_name(k.name, 'key column')}" for k in keys]
    texts = ", ".join(
        f"{key_text(ref, k)} AS [k{i}]" for i, (ref, k) in enumerate(zip(refs, keys, strict=True))
    )
    return Statement(
        f"SELECT TOP (1) {texts} FROM {two_part_name(source_schema, source_table)} AS t "
        f"WHERE {refs[0]} >= CAST({PARAM} AS {keys[0].sql_type.lower()}) "
        f"ORDER BY {', '.join(refs)};",
        (str(int(value)),),
    )


def key_statistics(source_schema: str, source_table: str) -> Statement:
    """The statistics of the table's primary key: its `stats_id` (an index's statistics share
    the index's id, https://learn.microsoft.com/en-us/sql/relational-databases/system-catalog-views/sys-stats-transact-sql)
    and the name of the key's leading column (`lead`); no row for a table without one."""
    return Statement(
        "SELECT i.index_id AS stats_id, c.name AS lead FROM sys.indexes AS i "
        "JOIN sys.index_columns AS ic ON ic.object_id = i.object_id AND ic.index_id = i.index_id "
        "JOIN sys.columns AS c ON c.object_id = ic.object_id AND c.column_id = ic.column_id "
        f"WHERE i.object_id = OBJECT_ID({PARAM}) AND i.is_primary_key = 1 AND ic.key_ordinal = 1;",
        (two_part_name(source_schema, source_table),),
    )


def stats_histogram(
    source_schema: str, source_table: str, lead: TableColumn, stats_id: int
) -> Statement:
    """The histogram steps of statistics `stats_id`: `range_rows`, `equal_rows` and the step's
    `range_high_key` converted to the leading key column's type, as lossless text (`k0`)
    (https://learn.microsoft.com/en-us/sql/relational-databases/system-dynamic-management-views/sys-dm-db-stats-histogram-transact-sql:
    range_high_key is sql_variant, so it is CAST first)."""
    cast_to = key_type(lead)
    if cast_to is None:
        raise ValueError(f"column {lead.name!r} of type {lead.sql_type} cannot bound a range")
    high = key_text(f"CAST(h.range_high_key AS {cast_to})", lead)
    return Statement(
        f"SELECT h.step_number AS step_number, h.range_rows AS range_rows, h.equal_rows AS "
        f"equal_rows, {high} AS [k0] FROM sys.dm_db_stats_histogram(OBJECT_ID({PARAM}), "
        f"CAST({PARAM} AS int)) AS h ORDER BY h.step_number;",
        (two_part_name(source_schema, source_table), str(int(stats_id))),
    )


def first_key_at(
    source_schema: str, source_table: str, keys: Sequence[TableColumn], value: str
) -> Statement:
    """The smallest key (as lossless text, `k0`, `k1`, ...) whose first column is at or above
    `value`, the first column's lossless text, compared by the server: one index seek reading
    at most one row; no row when none is."""
    refs = [f"t.{quote_name(k.name, 'key column')}" for k in keys]
    texts = ", ".join(
        f"{key_text(ref, k)} AS [k{i}]" for i, (ref, k) in enumerate(zip(refs, keys, strict=True))
    )
    return Statement(
        f"SELECT TOP (1) {texts} FROM {two_part_name(source_schema, source_table)} AS t "
        f"WHERE {refs[0]} >= {_param(keys[0])} ORDER BY {', '.join(refs)};",
        (value,),
    )


def key_tiles(
    source_schema: str, source_table: str, keys: Sequence[TableColumn], n: int
) -> Statement:
    """The first key (as lossless text) of tiles 2..n of NTILE(n) over the key order."""
    tiles = positive_int("n", n)
    names = [quote_name(k.name, "key column") for k in keys]
    order = ", ".join(names)
    texts = ", ".join(
        f"{key_text('y.' + name, k)} AS [k{i}]"
        for i, (name, k) in enumerate(zip(names, keys, strict=True))
    )
    return Statement(
        f"SELECT y.t AS tile, {texts} FROM (SELECT x.*, ROW_NUMBER() OVER (PARTITION BY x.t "
        f"ORDER BY {', '.join('x.' + name for name in names)}) AS p FROM (SELECT {order}, "
        f"NTILE({tiles}) OVER (ORDER BY {order}) AS t "
        f"FROM {two_part_name(source_schema, source_table)}) AS x) AS y "
        "WHERE y.p = 1 AND y.t > 1 ORDER BY y.t;"
    )


def _compare(
    ref: str, column: TableColumn, op: str, value: str | None
) -> tuple[str, list[str]] | None:
    """One key part against a bound part, NULL sorting first. None when nothing can match."""
    if value is None:
        return {
            "=": (f"{ref} IS NULL", []),
            ">": (f"{ref} IS NOT NULL", []),
            ">=": ("1 = 1", []),
        }.get(op)  # "< NULL" matches nothing
    param = _param(column)
    if op == "<":
        return f"({ref} IS NULL OR {ref} < {param})", [value]
    return f"{ref} {op} {param}", [value]


def range_pieces(
    refs: Sequence[str],
    keys: Sequence[TableColumn],
    parts: Sequence[str | None],
    last_op: str,
    *,
    inclusive: bool,
) -> list[tuple[str, list[str]]]:
    """One conjunction per key prefix: equal on the first i parts, `last_op` on part i+1."""
    pieces = []
    for i in range(len(parts)):
        conditions, params, possible = [], [], True
        for j in range(i + 1):
            found = _compare(refs[j], keys[j], "=" if j < i else last_op, parts[j])
            if found is None:
                possible = False
                break
            conditions.append(found[0])
            params += found[1]
        if possible:
            pieces.append((" AND ".join(conditions), params))
    if inclusive:
        equal = [_compare(refs[j], keys[j], "=", parts[j]) for j in range(len(parts))]
        pieces.append(
            (" AND ".join(e[0] for e in equal if e), [p for e in equal if e for p in e[1]])
        )
    return pieces


def table_rows(
    source_schema: str,
    source_table: str,
    columns: Sequence[ReadColumn],
    keys: Sequence[TableColumn],
    lo: KeyBound,
    hi: KeyBound,
) -> Statement:
    """Rows with `lo <= key < hi` (an open end is None), as a UNION ALL of seekable pieces."""
    table = two_part_name(source_schema, source_table)
    select = ", ".join(
        f"{column_expression(c, 't')} AS {quote_name(c.name, 'column name')}" for c in columns
    )
    refs = [f"t.{quote_name(k.name, 'key column')}" for k in keys]
    lo_parts, hi_parts = bound_parts(lo, len(keys)), bound_parts(hi, len(keys))
    upper: tuple[str, list[str]] | None = None
    if hi_parts is not None:
        below = range_pieces(refs, keys, hi_parts, "<", inclusive=False)
        # key < (NULL, ...) holds for no row: NULL sorts first
        any_below = " OR ".join(f"({condition})" for condition, _ in below) or "1 = 0"
        upper = (f"({any_below})", [p for _, values in below for p in values])
    lower = (
        [("1 = 1", [])]
        if lo_parts is None
        else range_pieces(refs, keys, lo_parts, ">", inclusive=True)
    )
    texts, params = [], []
    for condition, values in lower:
        where, piece_params = condition, list(values)
        if upper is not None:
            where = f"{condition} AND {upper[0]}"
            piece_params += upper[1]
        texts.append(f"SELECT {select} FROM {table} AS t WHERE {where}")
        params += piece_params
    return Statement(" UNION ALL ".join(texts) + ";", tuple(params))
