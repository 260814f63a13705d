"""Conversions at the emulator's Python face: times, LSN arguments, settings and Arrow streams."""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow as pa

Time = datetime | str
"""An emulator time: a naive datetime is UTC, an aware one is converted, a str is ISO 8601."""

_EPOCH = datetime(1970, 1, 1)
_ZERO_LSN = "0x" + "0" * 20
_INT_SETTINGS = (
    "maxtrans",
    "maxscans",
    "polling_interval_seconds",
    "retention_minutes",
    "cleanup_threshold",
    "max_text_repl_size",
    "lock_timeout_ms",
)
_FLAG_SETTINGS = ("command_id_column", "shuffle_unordered", "allow_snapshot_isolation")
SETTING_NAMES = (
    "capture",
    "maxtrans",
    "maxscans",
    "polling_interval_seconds",
    "idle_interval_seconds",
    "cleanup_job_time",
    "retention_minutes",
    "cleanup_threshold",
    "cleanup_job_rule",
    "max_text_repl_size",
    "command_id_column",
    "time_zone",
    "shuffle_unordered",
    "lock_timeout_ms",
    "allow_snapshot_isolation",
)  # in the order settings() returns them


def to_micros(value: Time) -> int:
    """UTC microseconds since 1970 of an emulator time."""
    if isinstance(value, str):
        return _text_micros(value)
    return _datetime_micros(value)


@functools.lru_cache(maxsize=256)
def _text_micros(value: str) -> int:
    # Cached: loops that commit many transactions usually pass the same few texts.
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"time {value!r} is not ISO 8601; pass e.g. '2026-09-28T13:50:00' or a datetime"
        ) from None
    return _datetime_micros(parsed)


def _datetime_micros(value: object) -> int:
    if not isinstance(value, datetime):
        raise TypeError(f"a time must be a datetime or an ISO 8601 str, not {type(value).__name__}")
    if value.tzinfo is not None and value.utcoffset() is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    delta = value - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def opt_micros(value: Time | None) -> int | None:
    return None if value is None else to_micros(value)


def from_micros(micros: int) -> datetime:
    """A naive datetime of UTC (or server-local) microseconds since 1970."""
    return _EPOCH + timedelta(microseconds=micros)


def lsn_arg(value: str | bytes, what: str = "lsn") -> str:
    """An LSN argument as text: str passes as is (the core checks it), bytes become hex."""
    if isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
        if not 1 <= len(raw) <= 10:
            raise ValueError(f"{what} of {len(raw)} bytes is not an LSN; pass 1 to 10 bytes")
        return "0x" + raw.hex().upper()
    if not isinstance(value, str):
        raise TypeError(f"{what} must be an LSN str ('0x' + hex digits) or bytes")
    return value


class ArrowStream:
    """One Arrow C stream from the native reader, handed over once via `__arrow_c_stream__`."""

    def __init__(self, capsule: object) -> None:
        self._capsule: object | None = capsule

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        capsule, self._capsule = self._capsule, None
        if capsule is None:
            raise ValueError("this Arrow stream was already consumed; read again for a new one")
        return capsule


def record_batch_reader(open_capsule: Callable[[], object]) -> pa.RecordBatchReader:
    """Imports a native stream into pyarrow without copying."""
    return pa.RecordBatchReader.from_stream(ArrowStream(open_capsule()))


def zero_lsn() -> str:
    return _ZERO_LSN


def to_pylist(reader: pa.RecordBatchReader) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = reader.read_all().to_pylist()
    return rows


def setting_text(name: str, value: object) -> str:
    """A setting's value as the engine stores it: text, "null" for None.

    Raises:
        ValueError: the value has no text form for this setting.
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        if name not in _FLAG_SETTINGS:
            raise ValueError(f"emulator setting {name}={value!r} is not valid; it is not a flag")
        return "true" if value else "false"
    if isinstance(value, int | str):
        return str(value)
    raise ValueError(f"emulator setting {name}={value!r} is not valid")


def setting_value(name: str, text: str) -> object:
    """A stored setting's text as its Python value: int, bool, str or None."""
    if text == "null":
        return None
    if name in _FLAG_SETTINGS:
        return text == "true"
    if name in _INT_SETTINGS or name == "idle_interval_seconds":
        return int(text)
    return text
