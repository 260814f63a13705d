"""The sink's side of the metrics directory (docs/sink.md, steps 3, 7, 9 and 12).

The reader writes partition metrics files (`range-*.json`) and event files (`event-*.json`);
the sink clears a dead attempt's partition files before the read, reads everything after it
(through `core.batch_files`, the one reader of the folder) and removes what it read once the
facts commit succeeded. Only plain files directly in the directory count: a subdirectory (such
as backfill()'s `_backfill`) and a symbolic link are never read or removed, and clearing a dead
attempt removes only the names the reader writes, so another program's files survive. A file
or record that does not parse is not an error here: the sink logs it, skips it and removes it
with the rest, so one torn file cannot stop a stream. A folder at a store URI is handled the
same way through its file system (`core.stores`, decision 1351).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from pathlib import Path

from mssql_cdc.core import (
    BatchFiles,
    StoreFiles,
    is_event_file,
    is_written_file,
    plain_files,
    read_batch_files,
)

__all__ = ["clear_dead_attempts", "remove_files", "scan"]

log = logging.getLogger("mssql_cdc.sink.writer")


def clear_dead_attempts(directory: str | os.PathLike[str], folder: StoreFiles | None = None) -> int:
    """Delete the reader's plain files except event files; return how many were deleted.

    Called before the batch's read: partition files present now belong to a dead attempt,
    while event files were written by this batch's planning, which Spark finished first.
    """
    removed = 0
    for path in plain_files(directory, folder):
        if isinstance(path, str):
            name = path.rsplit("/", 1)[-1]
            if folder is not None and not is_event_file(name) and is_written_file(name):
                folder.delete([name])
                removed += 1
            continue
        if is_event_file(path.name) or not is_written_file(path.name):
            continue
        try:
            path.unlink()
            removed += 1
        except FileNotFoundError:
            continue
    if removed:
        log.info("%s: removed %d metrics file(s) of a dead attempt", directory, removed)
    return removed


def scan(directory: str | os.PathLike[str], folder: StoreFiles | None = None) -> BatchFiles:
    """Read every metrics and event file of `directory`; each one left out is a WARNING.

    A file left out is still in `paths`, so it is removed with the rest.
    """
    found = read_batch_files(directory, folder)
    for problem in found.unreadable:
        log.warning("%s; skipped, and removed with the batch's files", problem)
    return found


def remove_files(paths: Iterable[Path | str], folder: StoreFiles | None = None) -> None:
    """Delete `paths` (local paths, or the URIs of files in the store folder `folder`); one
    that is already gone (a concurrent cleanup) is fine."""
    for path in paths:
        if isinstance(path, str):
            if folder is not None:
                folder.delete([path.rpartition("/")[2]])
        else:
            path.unlink(missing_ok=True)
