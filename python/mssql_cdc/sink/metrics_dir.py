"""The sink's side of the metrics directory (docs/sink.md, steps 3, 7, 9 and 12).

The reader writes partition metrics files (`range-*.json`) and event files (`event-*.json`);
the sink clears a dead attempt's partition files before the read, reads everything after it
and removes what it read once the facts commit succeeded. Only plain files directly in the
directory count: a subdirectory (such as backfill()'s `_backfill`) is never read or removed.
Unlike `metrics_files.read_metrics_dir`, a file that does not parse is not an error here: the
sink logs it, skips it and removes it with the rest, so one torn file cannot stop a stream.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from mssql_cdc.facts.details import EventRecord
from mssql_cdc.facts.rows import SOURCE_EVENTS

__all__ = [
    "Scan",
    "clear_dead_attempts",
    "is_event_file",
    "remove_files",
    "scan",
    "usable_events",
]

log = logging.getLogger("mssql_cdc.sink.writer")

_EVENT_FIELDS = ("event", "capture_instance", "lsn", "detail")


def is_event_file(name: str) -> bool:
    return name.startswith("event-") and name.endswith(".json")


@dataclass(slots=True)
class Scan:
    """What step 7 and 9 found: parsed metrics files, event records, and every path read."""

    metrics: list[dict[str, Any]] = field(default_factory=list)
    events: list[EventRecord] = field(default_factory=list)
    paths: list[Path] = field(default_factory=list)


def _plain_files(directory: Path) -> list[Path]:
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir() if p.is_file() and not p.is_symlink())


def clear_dead_attempts(directory: str | os.PathLike[str]) -> int:
    """Delete every plain file except event files; return how many were deleted.

    Called before the batch's read: partition files present now belong to a dead attempt,
    while event files were written by this batch's planning, which Spark finished first.
    """
    removed = 0
    for path in _plain_files(Path(directory)):
        if is_event_file(path.name):
            continue
        try:
            path.unlink()
            removed += 1
        except FileNotFoundError:
            continue
    if removed:
        log.info("%s: removed %d metrics file(s) of a dead attempt", directory, removed)
    return removed


def scan(directory: str | os.PathLike[str]) -> Scan:
    """Read every metrics and event file of `directory` (temporary `.`-files excepted).

    A file that is not JSON, not an object, or an event without the fields the facts need is
    logged at WARNING and skipped; its path is still in `paths`, so it is removed with the rest.
    """
    found = Scan()
    for path in _plain_files(Path(directory)):
        if path.name.startswith(".") or path.suffix != ".json":
            continue
        found.paths.append(path)
        payload = _parse(path)
        if payload is None:
            continue
        if not is_event_file(path.name):
            found.metrics.append(payload)
        elif _is_event_record(payload):
            found.events.append(cast("EventRecord", payload))
        else:
            log.warning(
                "event file %s is not a source event record (needs %s and event one of %s); "
                "skipped and removed",
                path,
                ", ".join(_EVENT_FIELDS),
                ", ".join(sorted(SOURCE_EVENTS)),
            )
    return found


def usable_events(records: list[Any], where: str) -> list[EventRecord]:
    """The records of a metrics file's `events` list that the facts can hold; others logged."""
    kept: list[EventRecord] = []
    for record in records:
        if isinstance(record, dict) and _is_event_record(record):
            kept.append(cast("EventRecord", record))
        else:
            log.warning(
                "%s: an event record without %s is skipped", where, ", ".join(_EVENT_FIELDS)
            )
    return kept


def remove_files(paths: list[Path]) -> None:
    """Delete `paths`; one that is already gone (a concurrent cleanup) is fine."""
    for path in paths:
        path.unlink(missing_ok=True)


def _parse(path: Path) -> dict[str, Any] | None:
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        log.warning("metrics file %s cannot be read (%s); skipped and removed", path, exc)
        return None
    if not isinstance(payload, dict):
        log.warning("metrics file %s holds no JSON object; skipped and removed", path)
        return None
    return payload


def _is_event_record(payload: dict[str, Any]) -> bool:
    return (
        payload.get("event") in SOURCE_EVENTS
        and isinstance(payload.get("lsn"), str)
        and isinstance(payload.get("detail"), dict)
    )
