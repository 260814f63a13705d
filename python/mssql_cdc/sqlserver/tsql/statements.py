"""Every T-SQL statement the real backends run, one function each (docs/sqlserver.md).

A function returns a `Statement`: text with parameter markers, and the parameter values.
Values are never put in the text; identifiers are validated and bracket-quoted; integers that
must be inlined (NTILE, OFFSET, LOCK_TIMEOUT) are checked Python ints. The reader never writes
to the source: only SELECT, the CDC help procedures and connection-level SET statements.

Commit times in a repeated local hour take the instant LSN order gives them (decision 1320).
A `time(n)` column reads as `time(7)` text, seven digits whatever its scale (decision 1347).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from mssql_cdc.options import change_table, quote_name, two_part_name
from mssql_cdc.sqlserver.metadata import ReadColumn

__all__ = [
    "CANDIDATE_COLUMNS",
    "PARAM",
    "Paramstyle",
    "Statement",
    "captured_columns",
    "change_rows",
    "change_table_access",
    "column_expression",
    "commit_candidates",
    "commit_time",
    "current_time_zone",
    "current_utc_offset",
    "ddl_history",
    "help_capture_instances",
    "mapping_below",
    "mapping_span",
    "max_lsn",
    "min_lsn",
    "network_wait",
    "nth_commit_after",
    "ping",
    "positive_int",
    "set_isolation",
    "set_lock_timeout",
    "split_points",
    "table_columns",
    "time_zone_exists",
    "utc_time",
]

Paramstyle = Literal["qmark", "pyformat"]

# Marks a parameter in the text until it is rendered for a driver. A control character cannot
# occur in a validated identifier, so the mark never collides with a quoted name's `?` or `%`.
PARAM = "\x1f"
_P = PARAM
_LSN = f"CONVERT(binary(10), {_P}, 1)"
_OFFSET = re.compile(r"^([+-])(\d{2}):(\d{2})$")


@dataclass(frozen=True, slots=True)
class Statement:
    """A T-SQL statement and its parameters, in the order their markers appear."""

    template: str
    params: tuple[object, ...] = ()

    def __post_init__(self) -> None:
        if self.template.count(_P) != len(self.params):
            raise ValueError(
                f"statement has {self.template.count(_P)} markers for {len(self.params)} values"
            )

    def render(self, paramstyle: Paramstyle) -> tuple[str, tuple[object, ...] | None]:
        """Return the text for a driver and its parameters (None when there are none).

        `qmark` (mssql-python) uses `?`. `pyformat` (pymssql) uses `%s` and leaves every other
        `%` alone: pymssql 2.4 substitutes only its markers and sends `%%` through as two
        characters, which SQL Server reads as a syntax error (found over the wire).
        """
        if paramstyle == "qmark":
            return self.template.replace(_P, "?"), self.params or None
        if not self.params:
            return self.template, None
        return self.template.replace(_P, "%s"), self.params

    @property
    def text(self) -> str:
        """The text with `?` markers, for logs and tests (never holds a value)."""
        return self.template.replace(_P, "?")


def positive_int(what: str, n: int) -> int:
    """Return `n` if it is a positive Python int (safe to inline), else raise ValueError."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"{what} must be a positive int (got {n!r})")
    return n


def utc_time(expression: str, time_zone: str) -> tuple[str, tuple[object, ...]]:
    """Return SQL turning a server-clock `datetime` expression into UTC `datetime2(3)`.

    `time_zone` is "UTC", a zone name (rules of each value's own date apply) or "+HH:MM".
    """
    if time_zone == "UTC":
        return f"CONVERT(datetime2(3), {expression})", ()
    offset = _OFFSET.match(time_zone)
    if offset:
        sign = 1 if offset.group(1) == "+" else -1
        minutes = sign * (int(offset.group(2)) * 60 + int(offset.group(3)))
        return f"DATEADD(minute, -{_P}, CONVERT(datetime2(3), {expression}))", (minutes,)
    return (
        f"CONVERT(datetime2(3), ({expression} AT TIME ZONE {_P}) AT TIME ZONE 'UTC')",
        (time_zone,),
    )


def max_lsn() -> Statement:
    return Statement("SELECT CONVERT(varchar(22), sys.fn_cdc_get_max_lsn(), 1) AS max_lsn;")


def min_lsn(capture_instance: str) -> Statement:
    return Statement(
        f"SELECT CONVERT(varchar(22), sys.fn_cdc_get_min_lsn({_P}), 1) AS min_lsn;",
        (capture_instance,),
    )


CANDIDATE_COLUMNS = ("_local", "_later", "_later_local")
"""Suffixes of the columns `commit_candidates` adds after its first in a named zone."""


def commit_candidates(expression: str, time_zone: str, name: str) -> tuple[str, tuple[object, ...]]:
    """Return SELECT items for a server-clock `datetime` expression: `name`, its earliest UTC
    instant (AT TIME ZONE's), then in a named zone `name_local` (the local time), `name_later`
    (the local time taken back by the offset in force three hours after the earliest instant)
    and `name_later_local` (the local time of that instant). The later instant is the local
    time's second one, a fall-back repeating it, when it is later and maps back to the same
    local time."""
    utc, params = utc_time(expression, time_zone)
    if time_zone == "UTC" or _OFFSET.match(time_zone):
        return f"{utc} AS [{name}]", params
    local = f"CONVERT(datetime2(3), {expression})"
    shifted = f"DATEADD(hour, 3, {expression} AT TIME ZONE {_P})"
    after = f"DATEPART(TZOFFSET, {shifted} AT TIME ZONE {_P})"
    later = f"DATEADD(minute, -{after}, {local})"
    later_local = f"CONVERT(datetime2(3), ({later} AT TIME ZONE 'UTC') AT TIME ZONE {_P})"
    zone = (time_zone,)
    items = [
        f"{utc} AS [{name}]",
        f"{local} AS [{name}{CANDIDATE_COLUMNS[0]}]",
        f"{later} AS [{name}{CANDIDATE_COLUMNS[1]}]",
        f"{later_local} AS [{name}{CANDIDATE_COLUMNS[2]}]",
    ]
    return ", ".join(items), (*params, *zone * 2, *zone * 3)


def commit_time(at: str, time_zone: str) -> Statement:
    """Commit time of `at`: the mapping entry equal to it, else the newest one below it; the
    entry's LSN and its candidate instants (`commit_candidates`)."""
    items, zone_params = commit_candidates("m.tran_end_time", time_zone, "commit_ts")
    return Statement(
        f"SELECT TOP (1) CONVERT(varchar(22), m.start_lsn, 1) AS lsn, {items} "
        f"FROM cdc.lsn_time_mapping AS m WHERE m.start_lsn <= {_LSN} ORDER BY m.start_lsn DESC;",
        (*zone_params, at),
    )


def mapping_below(below: str, n: int, time_zone: str) -> Statement:
    """At most n mapping entries below `below`, newest first, with their candidate instants."""
    top = positive_int("n", n)
    items, zone_params = commit_candidates("m.tran_end_time", time_zone, "commit_ts")
    return Statement(
        f"SELECT TOP ({top}) CONVERT(varchar(22), m.start_lsn, 1) AS lsn, {items} "
        f"FROM cdc.lsn_time_mapping AS m WHERE m.start_lsn < {_LSN} ORDER BY m.start_lsn DESC;",
        (*zone_params, below),
    )


def mapping_span(from_lsn: str, to_lsn: str, time_zone: str) -> Statement:
    """The mapping entries from `from_lsn` to `to_lsn`, in LSN order, with candidate instants."""
    items, zone_params = commit_candidates("m.tran_end_time", time_zone, "commit_ts")
    return Statement(
        f"SELECT CONVERT(varchar(22), m.start_lsn, 1) AS lsn, {items} "
        f"FROM cdc.lsn_time_mapping AS m WHERE m.start_lsn BETWEEN {_LSN} AND {_LSN} "
        "ORDER BY m.start_lsn;",
        (*zone_params, from_lsn, to_lsn),
    )


def nth_commit_after(after: str, n: int) -> Statement:
    """The n-th mapping entry above `after` (idle entries count, as transactions do)."""
    skip = positive_int("n", n) - 1
    return Statement(
        "SELECT CONVERT(varchar(22), m.start_lsn, 1) AS lsn FROM cdc.lsn_time_mapping AS m "
        f"WHERE m.start_lsn > {_LSN} ORDER BY m.start_lsn "
        f"OFFSET {skip} ROWS FETCH NEXT 1 ROWS ONLY;",
        (after,),
    )


def split_points(capture_instance: str, from_lsn: str, to_lsn: str, n: int) -> Statement:
    """NTILE(n) over a piece's change rows: each tile's highest commit LSN and its rows."""
    tiles = positive_int("n", n)
    return Statement(
        "SELECT x.t AS tile, CONVERT(varchar(22), MAX(x.l), 1) AS last_lsn, "
        "COUNT_BIG(*) AS row_count FROM (SELECT [__$start_lsn] AS l, "
        f"NTILE({tiles}) OVER (ORDER BY [__$start_lsn]) AS t "
        f"FROM {change_table(capture_instance)} "
        f"WHERE [__$start_lsn] BETWEEN {_LSN} AND {_LSN}) AS x "
        "GROUP BY x.t ORDER BY x.t;",
        (from_lsn, to_lsn),
    )


def column_expression(column: ReadColumn, alias: str) -> str:
    """The SELECT expression of a captured column for its declared Spark type."""
    ref = f"{alias}.{quote_name(column.name, 'column name')}"
    sql_type = (column.sql_type or "").lower()
    if column.spark_type == "STRING" and sql_type == "time":
        # HH:MM:SS.fffffff whatever the scale: time(n) alone prints n digits
        return f"CONVERT(nvarchar(max), CAST({ref} AS time(7)))"
    if column.spark_type == "STRING" and sql_type not in _NATIVE_TEXT:
        # uniqueidentifier upper case, xml and CLR types as text
        return f"CONVERT(nvarchar(max), {ref})"
    if column.spark_type == "BINARY" and sql_type not in _NATIVE_BINARY:
        return f"CONVERT(varbinary(max), {ref})"
    if column.spark_type == "TIMESTAMP":
        return f"CONVERT(datetime2(6), SWITCHOFFSET({ref}, '+00:00'))"  # the instant, in UTC
    return ref


_NATIVE_TEXT = frozenset({"char", "varchar", "nchar", "nvarchar", "text", "ntext"})
_NATIVE_BINARY = frozenset({"binary", "varbinary", "image"})


def change_rows(
    capture_instance: str,
    from_lsn: str,
    to_lsn: str,
    columns: Sequence[ReadColumn],
    *,
    include_command_id: bool,
    time_zone: str,
) -> Statement:
    """The change rows of one closed range, read from the change table itself; in a named zone
    `_commit_ts` is followed by its candidate columns (`commit_candidates`)."""
    utc, zone_params = commit_candidates("m.tran_end_time", time_zone, "_commit_ts")
    select = [
        "CONVERT(varchar(22), ct.[__$start_lsn], 1) AS [_start_lsn]",
        "CONVERT(varchar(22), ct.[__$seqval], 1) AS [_seqval]",
        "ct.[__$operation] AS [_operation]",
    ]
    order = ["ct.[__$start_lsn]"]
    if include_command_id:
        select.append("ct.[__$command_id] AS [_command_id]")
        order.append("ct.[__$command_id]")
    order += ["ct.[__$seqval]", "ct.[__$operation]"]
    select.append(utc)
    select += [
        f"{column_expression(c, 'ct')} AS {quote_name(c.name, 'column name')}" for c in columns
    ]
    return Statement(
        f"SELECT {', '.join(select)} FROM {change_table(capture_instance)} AS ct "
        "LEFT JOIN cdc.lsn_time_mapping AS m ON m.start_lsn = ct.[__$start_lsn] "
        f"WHERE ct.[__$start_lsn] BETWEEN {_LSN} AND {_LSN} ORDER BY {', '.join(order)};",
        (*zone_params, from_lsn, to_lsn),
    )


def help_capture_instances(
    source_schema: str | None = None, source_table: str | None = None
) -> Statement:
    """All instances the login can read, or one table's (both names given)."""
    if source_schema is None and source_table is None:
        return Statement("EXEC sys.sp_cdc_help_change_data_capture;")
    if source_schema is None or source_table is None:
        raise ValueError("help_capture_instances needs both the schema and the table, or neither")
    return Statement(
        f"EXEC sys.sp_cdc_help_change_data_capture @source_schema = {_P}, @source_name = {_P};",
        (source_schema, source_table),
    )


def instance_table(capture_instance: str) -> Statement:
    """The source schema and table of the instance of that name, from `cdc.change_tables`."""
    return Statement(
        "SELECT OBJECT_SCHEMA_NAME(source_object_id) AS source_schema, "
        "OBJECT_NAME(source_object_id) AS source_table "
        f"FROM cdc.change_tables WHERE capture_instance = {_P};",
        (capture_instance,),
    )


def captured_columns(capture_instance: str) -> Statement:
    return Statement(
        f"EXEC sys.sp_cdc_get_captured_columns @capture_instance = {_P};", (capture_instance,)
    )


def ddl_history(capture_instance: str) -> Statement:
    return Statement(
        f"EXEC sys.sp_cdc_get_ddl_history @capture_instance = {_P};", (capture_instance,)
    )


def table_columns(source_schema: str, source_table: str) -> Statement:
    """Columns of a source table: id, base type, computed flag, collation."""
    return Statement(
        "SELECT c.name AS name, c.column_id AS column_id, TYPE_NAME(c.system_type_id) AS "
        "base_type, c.max_length AS max_length, c.precision AS precision, c.scale AS scale, "
        "c.is_computed AS is_computed, c.collation_name AS collation_name "
        f"FROM sys.columns AS c WHERE c.object_id = OBJECT_ID({_P}) ORDER BY c.column_id;",
        (two_part_name(source_schema, source_table),),
    )


def change_table_access(capture_instance: str) -> Statement:
    """SELECT permission on the change table, and whether it has `__$command_id`."""
    name = change_table(capture_instance)
    return Statement(
        f"SELECT HAS_PERMS_BY_NAME({_P}, 'OBJECT', 'SELECT') AS can_select, "
        f"COL_LENGTH({_P}, '__$command_id') AS command_id_length;",
        (name, name),
    )


def current_time_zone() -> Statement:
    """The server's zone name (SQL Server 2022+ and Azure SQL; an error elsewhere)."""
    return Statement("SELECT CURRENT_TIMEZONE_ID() AS zone;")


def current_utc_offset() -> Statement:
    return Statement("SELECT DATEPART(TZOFFSET, SYSDATETIMEOFFSET()) AS offset_minutes;")


def time_zone_exists(zone: str) -> Statement:
    return Statement(
        f"SELECT COUNT(*) AS found FROM sys.time_zone_info WHERE name = {_P};", (zone,)
    )


def ping() -> Statement:
    return Statement("SELECT 1 AS one;")


def network_wait() -> Statement:
    return Statement(
        "SELECT wait_time_ms FROM sys.dm_exec_session_wait_stats "
        "WHERE session_id = @@SPID AND wait_type = 'ASYNC_NETWORK_IO';"
    )


def set_isolation(level: Literal["readCommitted", "snapshot"]) -> Statement:
    """Set the isolation level explicitly; READ UNCOMMITTED (NOLOCK) is never used."""
    text = {"readCommitted": "READ COMMITTED", "snapshot": "SNAPSHOT"}[level]
    return Statement(f"SET TRANSACTION ISOLATION LEVEL {text};")


def set_lock_timeout(ms: int) -> Statement:
    if isinstance(ms, bool) or not isinstance(ms, int) or ms < 0:
        raise ValueError(f"lock timeout must be an int >= 0 (got {ms!r})")
    return Statement(f"SET LOCK_TIMEOUT {ms};")
