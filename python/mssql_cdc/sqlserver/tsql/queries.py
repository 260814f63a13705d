"""Running the statements of `tsql` on a session and decoding their results into values.

Shared by the T-SQL backends; each function is one round trip (two for the catalog's
captured columns). LSNs come back as canonical text; the CDC help procedures return binary
LSNs, which only this module turns into text.

Commit times in a repeated local hour take the instant LSN order gives them (decision 1320).
"""

from __future__ import annotations

import logging
import re
from datetime import datetime
from typing import Any

from mssql_cdc.core import Tile, lsn
from mssql_cdc.errors import ConfigError
from mssql_cdc.sqlserver.commit_instants import Candidates, instants
from mssql_cdc.sqlserver.metadata import (
    CapturedColumn,
    CaptureInstance,
    ChangeTableAccess,
    DdlEntry,
)
from mssql_cdc.sqlserver.tsql import statements as tsql
from mssql_cdc.sqlserver.tsql.drivers import Session, error_number

__all__ = [
    "binary_lsn",
    "bracket_list",
    "candidates",
    "capture_instances",
    "captured_columns",
    "change_table_access",
    "commit_time",
    "ddl_history",
    "lsn_text",
    "mapping_below",
    "mapping_span",
    "max_lsn",
    "min_lsn",
    "nth_commit_after",
    "resolve_time_zone",
    "split_points",
]

_log = logging.getLogger("mssql_cdc.sqlserver")
_NOT_A_BUILTIN = 195  # CURRENT_TIMEZONE_ID() before SQL Server 2022
_offset_warned: set[str] = set()


def lsn_text(value: Any) -> lsn.Lsn | None:
    """Canonical LSN from `CONVERT(varchar(22), lsn, 1)` text; None for SQL NULL."""
    return None if value is None else lsn.normalize(str(value).strip())


def binary_lsn(value: Any) -> lsn.Lsn | None:
    """Canonical LSN from a binary(10) a help procedure returned; None for NULL."""
    if value is None:
        return None
    raw = bytes(value)
    if len(raw) != 10:
        raise ValueError(f"an LSN has 10 bytes; the server returned {len(raw)}")
    return lsn.Lsn("0x" + raw.hex().upper())


_BRACKETED = re.compile(r"\s*\[((?:[^\]]|\]\])*)\]\s*(?:,|$)")


def bracket_list(text: Any) -> tuple[str, ...]:
    """Split a `[a], [b]]c]` list as sp_cdc_help_change_data_capture writes it into names."""
    if text is None or not str(text).strip():
        return ()
    names: list[str] = []
    rest = str(text)
    while rest.strip():
        match = _BRACKETED.match(rest)
        if not match:
            return tuple(part.strip() for part in str(text).split(","))  # unquoted form
        names.append(match.group(1).replace("]]", "]"))
        rest = rest[match.end() :]
    return tuple(names)


def _time(value: Any) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value))


def max_lsn(session: Session) -> lsn.Lsn | None:
    return lsn_text(session.scalar(tsql.max_lsn()))


def min_lsn(session: Session, capture_instance: str) -> lsn.Lsn | None:
    return lsn_text(session.scalar(tsql.min_lsn(capture_instance)))


def candidates(row: dict[str, Any], at: lsn.Lsn, name: str = "commit_ts") -> Candidates | None:
    """The candidate instants of a row `commit_candidates` selected; None for a NULL time.

    The later instant counts only when it is later and its local time is the row's own.
    """
    earliest = _time(row.get(name))
    if earliest is None:
        return None
    later = _time(row.get(name + tsql.CANDIDATE_COLUMNS[1]))
    local = _time(row.get(name + tsql.CANDIDATE_COLUMNS[0]))
    later_local = _time(row.get(name + tsql.CANDIDATE_COLUMNS[2]))
    repeated = later is not None and later > earliest and later_local == local
    return Candidates(at, earliest, later if repeated and later else earliest)


def _entries(rows: list[dict[str, Any]]) -> list[Candidates]:
    found = []
    for row in rows:
        at = lsn_text(row["lsn"])
        entry = None if at is None else candidates(row, at)
        if entry is not None:
            found.append(entry)
    return found


def mapping_below(session: Session, below: lsn.Lsn, n: int, time_zone: str) -> list[Candidates]:
    """At most n mapping entries below `below`, newest first (the chain's `Lookback`)."""
    return _entries(session.rows(tsql.mapping_below(below, n, time_zone)))


def mapping_span(
    session: Session, from_lsn: lsn.Lsn, to_lsn: lsn.Lsn, time_zone: str
) -> dict[lsn.Lsn, datetime]:
    """The instant of every mapping entry from `from_lsn` to `to_lsn`."""
    entries = _entries(session.rows(tsql.mapping_span(from_lsn, to_lsn, time_zone)))
    found = instants(entries, lambda below, n: mapping_below(session, below, n, time_zone))
    return dict(zip((e.lsn for e in entries), found, strict=True))


def commit_time(session: Session, at: lsn.Lsn, time_zone: str) -> datetime | None:
    """The instant of the mapping entry at or below `at`: AT TIME ZONE's, unless the zone
    repeats its local time; then the one LSN order gives."""
    rows = session.rows(tsql.commit_time(at, time_zone))
    at_entry = lsn_text(rows[0]["lsn"]) if rows else None
    entry = None if at_entry is None else candidates(rows[0], at_entry)
    if entry is None:
        return None
    if not entry.ambiguous:
        return entry.earliest
    return instants([entry], lambda below, n: mapping_below(session, below, n, time_zone))[0]


def nth_commit_after(session: Session, after: lsn.Lsn, n: int) -> lsn.Lsn | None:
    return lsn_text(session.scalar(tsql.nth_commit_after(after, n)))


def split_points(
    session: Session, capture_instance: str, from_lsn: lsn.Lsn, to_lsn: lsn.Lsn, n: int
) -> list[Tile]:
    rows = session.rows(tsql.split_points(capture_instance, from_lsn, to_lsn, n))
    tiles = []
    for row in rows:
        last = lsn_text(row["last_lsn"])
        if last is not None:
            tiles.append(Tile(last, int(row["row_count"])))
    return tiles


def capture_instances(
    session: Session, source_schema: str | None = None, source_table: str | None = None
) -> list[CaptureInstance]:
    """Instances the login can read (or one table's), oldest first by create date, then S."""
    rows = session.rows(tsql.help_capture_instances(source_schema, source_table))
    found = [
        CaptureInstance(
            name=str(row["capture_instance"]),
            source_schema=str(row["source_schema"]),
            source_table=str(row["source_table"]),
            start_lsn=binary_lsn(row.get("start_lsn")),
            create_date=_time(row.get("create_date")),
            index_columns=bracket_list(row.get("index_column_list")),
            captured_columns=bracket_list(row.get("captured_column_list")),
        )
        for row in rows
    ]
    found.sort(key=lambda ci: (ci.create_date or datetime.min, ci.start_lsn or lsn.ZERO))
    return found


def _type_text(row: dict[str, Any]) -> str:
    name = str(row["data_type"]).lower()
    if name in ("char", "varchar", "nchar", "nvarchar", "binary", "varbinary"):
        length = row.get("character_maximum_length")
        return f"{name}({'max' if length in (-1, None) else length})"
    if name in ("decimal", "numeric"):
        return f"{name}({row.get('numeric_precision')},{row.get('numeric_scale')})"
    if (
        name in ("datetime2", "time", "datetimeoffset")
        and row.get("datetime_precision") is not None
    ):
        return f"{name}({row['datetime_precision']})"
    return name


def captured_columns(session: Session, instance: CaptureInstance) -> list[CapturedColumn]:
    """The instance's captured columns in change-table order, with source id and computed flag."""
    captured = session.rows(tsql.captured_columns(instance.name))
    source = {
        str(row["name"]): row
        for row in session.rows(tsql.table_columns(instance.source_schema, instance.source_table))
    }
    out = []
    for row in sorted(captured, key=lambda r: int(r["column_ordinal"])):
        name = str(row["column_name"])
        in_source = source.get(name)
        out.append(
            CapturedColumn(
                name=name,
                ordinal=int(row["column_ordinal"]),
                column_id=None if in_source is None else int(in_source["column_id"]),
                sql_type=str(row["data_type"]).lower(),
                type_text=_type_text(row),
                is_computed=bool(in_source and in_source["is_computed"]),
            )
        )
    return out


def ddl_history(
    session: Session, capture_instance: str, after: lsn.Lsn, upto: lsn.Lsn
) -> list[DdlEntry]:
    """DDL entries with `after < ddl_lsn <= upto`, in LSN order."""
    entries = []
    for row in session.rows(tsql.ddl_history(capture_instance)):
        at = binary_lsn(row["ddl_lsn"])
        if at is not None and after < at <= upto:
            entries.append(
                DdlEntry(
                    ddl_lsn=at,
                    ddl_time=_time(row.get("ddl_time")),
                    ddl_command=str(row.get("ddl_command") or ""),
                    required_column_update=bool(row.get("required_column_update")),
                )
            )
    return sorted(entries, key=lambda e: e.ddl_lsn)


def change_table_access(session: Session, capture_instance: str) -> ChangeTableAccess:
    rows = session.rows(tsql.change_table_access(capture_instance))
    row = rows[0] if rows else {}
    return ChangeTableAccess(
        can_select=row.get("can_select") == 1,
        has_command_id=row.get("command_id_length") is not None,
    )


def resolve_time_zone(session: Session, setting: str) -> str:
    """Resolve `sourceTimeZone`: "UTC", a zone the server knows, or the server's own zone.

    `auto` uses CURRENT_TIMEZONE_ID() where it exists; elsewhere the current UTC offset
    ("+HH:MM"), with one WARNING per server that times can be an hour off around a
    daylight-saving change.

    Raises:
        ConfigError: a named zone is not in sys.time_zone_info.
    """
    if setting == "UTC":
        return "UTC"
    if setting != "auto":
        if not session.scalar(tsql.time_zone_exists(setting)):
            raise ConfigError(
                f"option sourceTimeZone: the server does not know the zone {setting!r}; give a "
                "name from sys.time_zone_info (e.g. 'W. Europe Standard Time'), UTC or auto"
            )
        return setting
    try:
        zone = session.scalar(tsql.current_time_zone())
    except Exception as exc:  # re-raised unless the function does not exist on this server
        if error_number(exc) != _NOT_A_BUILTIN:
            raise
        zone = None
    if zone:
        return str(zone)
    minutes = int(session.scalar(tsql.current_utc_offset()) or 0)
    sign = "+" if minutes >= 0 else "-"
    offset = f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
    if offset not in _offset_warned:
        _offset_warned.add(offset)
        _log.warning(
            "sourceTimeZone=auto: this server has no CURRENT_TIMEZONE_ID(), so commit times use "
            "its current UTC offset %s and can be an hour off around a daylight-saving change; "
            "set sourceTimeZone to the server's zone name to avoid it",
            offset,
        )
    return offset
