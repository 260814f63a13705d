"""Refusing to start where a run cannot write: a full disk, a read-only or forbidden folder.

A run on a file system with no room, or on a folder it may not write, fails in the middle of
a batch, in Spark's checkpoint writer, with a Java `IOException` ("No space left on device",
"Read-only file system", "Permission denied") that names neither the folder nor what to do.
`check_space` and `check_writable` look before anything is written, at the nearest folder of
the path that exists, and raise an error naming the path, the fault and what to do
(decisions 1407, 1409). A disk that fills while a query runs is told after the fact:
`write_fault_advice` reads the failure's text and names the folders and what to do
(decision 1410).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from mssql_cdc.errors import ConfigError, DiskFullError

__all__ = ["MIN_FREE_BYTES", "check_space", "check_writable", "free_bytes", "write_fault_advice"]

MIN_FREE_BYTES = 64 * 1024
"""Below this many free bytes a run does not start: an offsets file, a commit file, a state
file and a facts commit each need a few KB."""


def _nearest_folder(path: str | os.PathLike[str]) -> Path | None:
    """The nearest of `path` and its parents that exists as a folder."""
    here = Path(path).absolute()
    return next((folder for folder in (here, *here.parents) if folder.is_dir()), None)


def free_bytes(path: str | os.PathLike[str]) -> int | None:
    """The bytes this process may still write on the file system holding `path` (the nearest
    folder of it that exists), or None when nothing of it can be examined."""
    folder = _nearest_folder(path)
    if folder is None:
        return None
    try:
        stats = os.statvfs(folder)
    except OSError:
        return None
    blocks = stats.f_bfree if os.geteuid() == 0 else stats.f_bavail  # root has the reserve
    return blocks * stats.f_frsize


def check_writable(path: str | os.PathLike[str], *, what: str) -> None:
    """Raise `ConfigError` when this process may not create files in the nearest existing
    folder of the local `path` (a read-only file system, or its permissions); `what` names
    the path's role.

    Raises:
        ConfigError: naming `what`, the path, the folder, the fault and what to do.
    """
    folder = _nearest_folder(path)
    if folder is None or os.access(folder, os.W_OK | os.X_OK):
        return
    try:
        read_only = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        read_only = False
    if read_only:
        fault = f"{folder} is on a read-only file system"
        fix = "mount it read-write"
    else:
        fault = f"this process (uid {os.geteuid()}) may not write in {folder}: permission denied"
        fix = "give the user running Spark's driver write permission on that folder"
    raise ConfigError(
        f"{what} at {os.fspath(path)} cannot be written: {fault}. Nothing was started or "
        f"written. {fix[0].upper()}{fix[1:]} (or give the stream a folder it may write) and run "
        f"again: the run resumes after the last committed batch."
    )


def check_space(path: str | os.PathLike[str], *, what: str) -> None:
    """Raise `DiskFullError` when the file system holding the local `path` has less than
    `MIN_FREE_BYTES` free; `what` names the path's role (say, "the checkpoint").

    Raises:
        DiskFullError: naming `what`, the path, the bytes free and what to do.
    """
    free = free_bytes(path)
    if free is None or free >= MIN_FREE_BYTES:
        return
    raise DiskFullError(
        f"no space left on device for {what} at {os.fspath(path)}: its file system has "
        f"{free:,} bytes free, under the {MIN_FREE_BYTES:,} a run needs. Nothing was started "
        f"or written. Free space on that file system (or give the stream a folder on another "
        f"one) and run again: the run resumes after the last committed batch.",
        os.fspath(path),
        free,
    )


_WRITE_FAULTS = (
    ("No space left on device", "free space on its file system"),
    ("Read-only file system", "mount it read-write"),
)


def write_fault_advice(text: str, folders: Sequence[tuple[str, str]]) -> str | None:
    """What to do about a query that failed writing its folders, or None when `text` (the
    failure's message, Spark's included) names no such fault.

    `folders` are the local folders the query wrote, each with its role ("the checkpoint");
    each is named with the bytes its file system has free now.
    """
    found = next(((fault, fix) for fault, fix in _WRITE_FAULTS if fault in text), None)
    if found is None:
        return None
    fault, fix = found
    where = "; ".join(
        f"{what} {path} ({free:,} bytes free)"
        if (free := free_bytes(path)) is not None
        else f"{what} {path}"
        for path, what in folders
    )
    return (
        f"the query stopped writing its files: {fault.lower()} ({where or 'a folder it wrote'}). "
        f"Committed batches are kept; {fix} and run again: the run resumes after the last "
        f"committed batch."
    )
