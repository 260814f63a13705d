"""Server-local commit times to UTC, for the emulator, whose reader returns local times.

`time_zone` is what planning resolved from `sourceTimeZone`: "UTC", an IANA zone name, or a fixed
offset "+HH:MM". As SQL Server's AT TIME ZONE does, a local time that a fall-back repeats takes
its first instant, and one in a spring-forward gap is taken back by the offset before the change
(learn.microsoft.com/sql/t-sql/queries/at-time-zone-transact-sql). `local_candidates` also gives
the second instant of a repeated time, which `commit_instants` chooses between (decision 1320).
`time` columns read as seven-digit text from the emulator's nanoseconds (decision 1347);
`datetime2` and `datetimeoffset` columns declared STRING (`text_scales` names them) the native
reader writes as the text SQL Server's CONVERT writes, from all seven stored digits, as over TDS
(decisions 1344 and 1345).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from mssql_cdc.core import time_scale
from mssql_cdc.errors import ConfigError
from mssql_cdc.sqlserver.metadata import ReadColumn

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "local_candidates",
    "local_candidates_array",
    "local_to_utc",
    "local_to_utc_array",
    "text_scales",
    "times_as_text",
    "zone_of",
]

_OFFSET = re.compile(r"^([+-])(\d{2}):(\d{2})$")


def zone_of(name: str) -> ZoneInfo:
    """The zoneinfo zone of `name`.

    Raises:
        ConfigError: zoneinfo does not know it; the message names sourceTimeZone.
    """
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(
            f"option sourceTimeZone {name!r} is not a time zone the emulator knows; give auto, "
            "UTC or an IANA zone name such as Europe/Berlin"
        ) from None


def _offset(time_zone: str) -> timedelta | None:
    match = _OFFSET.match(time_zone)
    if match is None:
        return None
    sign = -1 if match.group(1) == "-" else 1
    return sign * timedelta(hours=int(match.group(2)), minutes=int(match.group(3)))


def local_to_utc(local: datetime, time_zone: str) -> datetime:
    """The naive UTC datetime of a naive server-local one, as AT TIME ZONE gives it."""
    return local_candidates(local, time_zone)[0]


def local_candidates(local: datetime, time_zone: str) -> tuple[datetime, datetime]:
    """The earliest and latest naive UTC instants of a naive server-local time; they differ only
    for a local time that a fall-back repeats."""
    if time_zone == "UTC":
        return local, local
    offset = _offset(time_zone)
    if offset is not None:
        return local - offset, local - offset
    zone = zone_of(time_zone)
    # fold=0 reads a time in a gap with the offset before the change, as SQL Server does.
    first = local.replace(tzinfo=zone, fold=0).astimezone(UTC).replace(tzinfo=None)
    second = local.replace(tzinfo=zone, fold=1).astimezone(UTC).replace(tzinfo=None)
    return first, max(first, second)


def local_to_utc_array(values: pa.Array | pa.ChunkedArray, time_zone: str) -> pa.Array:
    """`local_to_utc` over an Arrow `timestamp[us]` column, vectorised."""
    return local_candidates_array(values, time_zone)[0]


def local_candidates_array(
    values: pa.Array | pa.ChunkedArray, time_zone: str
) -> tuple[pa.Array, pa.Array]:
    """`local_candidates` over an Arrow `timestamp[us]` column, vectorised; the few values in a
    transition (repeated or skipped) are converted one by one."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if time_zone == "UTC":
        return values, values
    offset = _offset(time_zone)
    if offset is not None:
        micros = offset // timedelta(microseconds=1)
        shifted = pc.subtract(values.cast(pa.int64()), micros).cast(pa.timestamp("us"))
        return shifted, shifted
    zone_of(time_zone)

    def utc(which: str) -> pa.Array:
        aware = pc.assume_timezone(values, timezone=time_zone, ambiguous=which, nonexistent=which)
        return aware.cast(pa.timestamp("us", tz="UTC")).cast(pa.int64()).cast(pa.timestamp("us"))

    first, last = utc("earliest"), utc("latest")
    differs = pc.fill_null(pc.not_equal(first, last), False)
    if not pc.any(differs).as_py():
        return first, last
    firsts, lasts = first.to_pylist(), last.to_pylist()
    for i, local in enumerate(values.to_pylist()):
        if local is not None and firsts[i] != lasts[i]:
            firsts[i], lasts[i] = local_candidates(local, time_zone)
    kind = pa.timestamp("us")
    return pa.array(firsts, type=kind), pa.array(lasts, type=kind)


def times_as_text(batch: pa.RecordBatch) -> pa.RecordBatch:
    """`time` columns (Arrow time64[ns] from the emulator, which keeps 100 ns) as SQL
    Server's text form `HH:MM:SS.fffffff`, seven digits whatever the column's scale, as the
    T-SQL backends read them."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for i, field in enumerate(batch.schema):
        if pa.types.is_time(field.type):
            nanos = batch.column(i).cast(pa.time64("ns")).cast(pa.string())  # 9 digits
            text = pc.utf8_slice_codeunits(nanos, 0, len("HH:MM:SS.fffffff"))
            batch = batch.set_column(i, pa.field(field.name, pa.string()), text)
    return batch


def text_scales(columns: Sequence[ReadColumn], types: Mapping[str, str]) -> dict[str, int]:
    """The `datetime2`/`datetimeoffset` columns of `columns` declared STRING, with their scale
    (`types`: each column's SQL type as `datetime2(7)`): the native reader's `text_columns`."""
    out: dict[str, int] = {}
    for c in columns:
        sql_type = types.get(c.name, "")
        scale = time_scale(sql_type)
        if c.spark_type == "STRING" and scale is not None and not sql_type.startswith("time"):
            out[c.name] = scale
    return out
