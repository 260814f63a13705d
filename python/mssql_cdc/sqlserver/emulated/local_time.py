"""Server-local commit times to UTC, for the emulator, whose reader returns local times.

`time_zone` is what planning resolved from `sourceTimeZone`: "UTC", an IANA zone name, or a fixed
offset "+HH:MM". A local time that a fall-back transition repeats takes its first instant.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from mssql_cdc.errors import ConfigError

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["local_to_utc", "local_to_utc_array", "times_as_text", "zone_of"]

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
    """The naive UTC datetime of a naive server-local one."""
    if time_zone == "UTC":
        return local
    offset = _offset(time_zone)
    if offset is not None:
        return local - offset
    aware = local.replace(tzinfo=zone_of(time_zone), fold=0)
    return aware.astimezone(UTC).replace(tzinfo=None)


def local_to_utc_array(values: pa.Array | pa.ChunkedArray, time_zone: str) -> pa.Array:
    """`local_to_utc` over an Arrow `timestamp[us]` column, vectorised."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if time_zone == "UTC":
        return values
    offset = _offset(time_zone)
    if offset is not None:
        micros = offset // timedelta(microseconds=1)
        as_int = pc.subtract(values.cast(pa.int64()), micros)
        return as_int.cast(pa.timestamp("us"))
    zone_of(time_zone)
    aware = pc.assume_timezone(
        values, timezone=time_zone, ambiguous="earliest", nonexistent="earliest"
    )
    return aware.cast(pa.timestamp("us", tz="UTC")).cast(pa.int64()).cast(pa.timestamp("us"))


def times_as_text(batch: pa.RecordBatch) -> pa.RecordBatch:
    """`time` columns (Arrow time64[us] from the emulator) as SQL Server's text form
    `HH:MM:SS.fffffff`; the emulator keeps microseconds, so the seventh
    digit is 0."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for i, field in enumerate(batch.schema):
        if pa.types.is_time(field.type):
            text = pc.binary_join_element_wise(
                batch.column(i).cast(pa.time64("us")).cast(pa.string()), "0", ""
            )
            batch = batch.set_column(i, pa.field(field.name, pa.string()), text)
    return batch
