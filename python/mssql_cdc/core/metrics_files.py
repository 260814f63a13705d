"""Metrics and event files under `metricsPath` (docs/source.md, 'Events and metrics files').

The JSON shapes of the files and their names. Files are written whole (a temporary
`.<name>.<random>.tmp`, then `os.replace`; on an object store one PUT, which is atomic per
object, decision 1351) under names a replanned batch reproduces, so a replay rewrites rather
than duplicates. Writing never fails a read or a plan: a file that cannot be
written is a WARNING naming the path and the error. The event record's typed form is
`core.events.EventRecord`; `core.batch_files` reads a batch's folder back.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
from pathlib import Path
from typing import Any, Literal, NotRequired, TypedDict, get_args

from mssql_cdc.core.range_counts import RangeCounts
from mssql_cdc.core.stores import StoreFiles

__all__ = [
    "EVENT_KINDS",
    "EventJson",
    "EventKind",
    "RangeMetrics",
    "chunk_file_name",
    "encode_instance",
    "event_file_name",
    "is_event_file",
    "is_library_file",
    "is_written_file",
    "progress_file_name",
    "range_file_name",
    "write_json_atomic",
]

_log = logging.getLogger("mssql_cdc.metrics")
_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")

EventKind = Literal["data_skipped", "schema_change", "capture_instance_switched"]
EVENT_KINDS: frozenset[str] = frozenset(get_args(EventKind))


class EventJson(TypedDict):
    """An event record's JSON object, keys in the order they are written."""

    event: EventKind
    capture_instance: str
    lsn: str
    commit_ts: str | None
    detail: dict[str, Any]
    lost_from_ts: str | None
    lost_to_ts: str | None
    batch_start_lsn: str
    batch_end_lsn: str


class RangeMetrics(TypedDict):
    """A task's `range-<from>-<to>.json`, keys in written order.

    docs/source.md, 'Events and metrics files', says what each key holds.

    Watermark, source max and capture lag are set on the batch's last range only.
    """

    kind: Literal["range"]
    capture_instance: str
    from_lsn: str
    to_lsn: str
    last: bool
    batch_start_lsn: str
    batch_end_lsn: str
    rows: int
    bytes: int
    seconds: float
    to_commit_ts: str | None
    rtt_ms: float | None
    network_wait_ms: float | None
    retention_watermark_ts: str | None
    source_max_lsn: str | None
    source_max_commit_ts: str | None
    capture_lag_seconds: float | None
    warnings: list[str]
    events: list[EventJson]
    counts: NotRequired[RangeCounts]  # counted as read: the sink runs no aggregate job


def encode_instance(name: str) -> str:
    """Percent-encode (upper-case UTF-8 hex) every character outside `A-Z a-z 0-9 _ . -`."""
    out = []
    for ch in name:
        if ch in _SAFE:
            out.append(ch)
        else:
            out.extend(f"%{byte:02X}" for byte in ch.encode("utf-8"))
    return "".join(out)


def event_file_name(kind: EventKind, capture_instance: str, lsn: str) -> str:
    """`event-<kind>-<ci>-<lsn>.json`; the LSN is the skip's <from>, the DDL's or S."""
    return f"event-{kind}-{encode_instance(capture_instance)}-{lsn}.json"


def is_event_file(name: str) -> bool:
    """Whether a file name is an event file's, `event-*.json` (planning's, not a task's)."""
    return name.startswith("event-") and name.endswith(".json")


def is_written_file(name: str) -> bool:
    """Whether a file name is one `write_json_atomic` leaves: `<name>.json`, or the temporary
    `.<name>.json.<hex>.tmp` of a write cut short."""
    if name.startswith("."):
        return name.endswith(".tmp") and ".json." in name
    return name.endswith(".json")


_LIBRARY_PREFIXES = ("range-", "chunk-", "progress-", "event-")


def is_library_file(name: str) -> bool:
    """Whether a file name is one the library writes into a metrics folder: a range, chunk,
    progress or event file (`range-*.json`, `chunk-*.json`, `progress-*.json`, `event-*.json`)
    or the temporary `.<name>.<hex>.tmp` of one written by `write_json_atomic`."""
    if name.startswith(".") and name.endswith(".tmp"):
        name, dot, suffix = name[1:-4].rpartition(".")
        if not dot or not suffix or any(c not in "0123456789abcdef" for c in suffix):
            return False
    return name.startswith(_LIBRARY_PREFIXES) and name.endswith(".json") and "/" not in name


def range_file_name(from_lsn: str, to_lsn: str) -> str:
    return f"range-{from_lsn}-{to_lsn}.json"


def chunk_file_name(chunk: int) -> str:
    return f"chunk-{chunk}.json"


def progress_file_name(partition: int) -> str:
    """`progress-<partition>.json`: rows a whole snapshot's task has read so far."""
    return f"progress-{partition}.json"


def write_json_atomic(
    directory: str | os.PathLike[str],
    name: str,
    payload: object,
    folder: StoreFiles | None = None,
) -> bool:
    """Write `payload` as `<directory>/<name>` atomically, creating the directory if needed.

    With `folder`, the store folder at `directory` (a URI, `core.stores`), the file is written
    there in one PUT, which no reader sees half done.

    Returns:
        True when the file is in place; False when it could not be written (logged as a
        WARNING naming the path and the error; never raised).
    """
    if folder is not None:
        return _put(folder, name, payload)
    local = Path(directory)
    target = local / name
    temp = local / f".{name}.{secrets.token_hex(6)}.tmp"
    try:
        text = json.dumps(payload, ensure_ascii=False)
        local.mkdir(parents=True, exist_ok=True)
        with open(temp, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temp, target)
        return True
    except (OSError, TypeError, ValueError) as exc:
        _log.warning("metrics file %s could not be written and is skipped: %s", target, exc)
        with contextlib.suppress(OSError):  # the directory itself may be unusable
            temp.unlink(missing_ok=True)
        return False


def _put(folder: StoreFiles, name: str, payload: object) -> bool:
    target = folder.file(name)
    try:
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        folder.write(name, data)
        return True
    except (OSError, TypeError, ValueError) as exc:
        _log.warning("metrics file %s could not be written and is skipped: %s", target, exc)
        return False
