"""Reading a batch's metrics folder back: its range files, event files and event records.

The one reader of the folder, for the sink and the tests alike. It never raises over a file's
content: a file that is not a JSON object, and an event record `EventRecord.from_json` refuses,
is reported in `unreadable` with its file named, and its path is still in `paths`. The sink
logs it and removes it with the rest, so one torn or foreign file cannot stop a stream on every
replay. Only plain files directly in the folder count: names starting
with `.` (temporary files), other suffixes, subdirectories such as backfill()'s `_backfill`,
and symbolic links are never read. A folder at a store URI (`core.stores`) is read through its
file system the same way; its files are named by their URIs (decision 1351).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mssql_cdc.core.events import EventRecord
from mssql_cdc.core.metrics_files import is_event_file
from mssql_cdc.core.stores import StoreFiles
from mssql_cdc.errors import StateFileError

__all__ = ["BatchFiles", "plain_files", "read_batch_files"]


@dataclass(frozen=True, slots=True)
class BatchFiles:
    """What a batch's metrics folder holds, in file-name order.

    `ranges` are the tasks' metrics files (every `*.json` but event files) as parsed objects;
    `events` the records of the event files, then those in the range files' `events` lists;
    `unreadable` one message per file or record left out, naming it; `paths` every file read
    (a local `Path`, or the URI of a file on a store).
    """

    ranges: tuple[dict[str, Any], ...] = ()
    events: tuple[EventRecord, ...] = ()
    unreadable: tuple[str, ...] = ()
    paths: tuple[Path | str, ...] = ()


def plain_files(
    directory: str | os.PathLike[str], folder: StoreFiles | None = None
) -> list[Path | str]:
    """The plain files directly in `directory`, by name; none when it does not exist. With
    `folder`, the store folder at `directory`, its files are their URIs."""
    if folder is not None:
        return [folder.file(name) for name in folder.names()]
    local = Path(directory)
    if not local.is_dir():
        return []
    return sorted(p for p in local.iterdir() if p.is_file() and not p.is_symlink())


def read_batch_files(
    directory: str | os.PathLike[str], folder: StoreFiles | None = None
) -> BatchFiles:
    """Read every metrics and event file of `directory`; a missing directory reads as empty.
    With `folder`, the store folder at `directory`, it is read there."""
    ranges: list[dict[str, Any]] = []
    planned: list[EventRecord] = []
    tasks: list[EventRecord] = []
    unreadable: list[str] = []
    paths: list[Path | str] = []
    for path in plain_files(directory, folder):
        name = _name(path)
        if name.startswith(".") or not name.endswith(".json"):
            continue
        paths.append(path)
        try:
            payload = _parse(path, folder)
            if is_event_file(name):
                planned.append(EventRecord.from_json(payload, where=f"event file {path}"))
                continue
        except StateFileError as exc:
            unreadable.append(str(exc))
            continue
        ranges.append(payload)
        records = payload.get("events") or []
        if not isinstance(records, list):
            unreadable.append(f"metrics file {path}: its events are not a list")
            continue
        for index, record in enumerate(records):
            try:
                tasks.append(EventRecord.from_json(record, where=f"{path} events[{index}]"))
            except StateFileError as exc:
                unreadable.append(str(exc))
    return BatchFiles(tuple(ranges), tuple(planned + tasks), tuple(unreadable), tuple(paths))


def _store(folder: StoreFiles | None) -> StoreFiles:
    assert folder is not None  # a file URI is listed only from a store folder
    return folder


def _name(path: Path | str) -> str:
    return path.name if isinstance(path, Path) else path.rsplit("/", 1)[-1]


def _parse(path: Path | str, folder: StoreFiles | None) -> dict[str, Any]:
    try:
        data = path.read_bytes() if isinstance(path, Path) else _store(folder).read(_name(path))
    except OSError as exc:
        raise StateFileError(f"metrics file {path} cannot be read ({exc})") from None
    try:
        payload = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise StateFileError(
            f"metrics file {path} is not valid JSON ({exc}); the library writes its files "
            "whole, so another program wrote or changed it"
        ) from None
    if not isinstance(payload, dict):
        raise StateFileError(f"metrics file {path} holds no JSON object")
    return payload
