"""Refusing to start on a full disk: the free space of the folders a run writes (decision 1407).

A run on a file system with no room fails in the middle of a batch, in Spark's checkpoint
writer, with a Java `IOException: No space left on device` that names neither the folder nor
what to do. `check_space` looks before anything is written, at the nearest folder of the path
that exists, and raises `DiskFullError` naming the path, the bytes free and what to do.
"""

from __future__ import annotations

import os
from pathlib import Path

from mssql_cdc.errors import DiskFullError

__all__ = ["MIN_FREE_BYTES", "check_space", "free_bytes"]

MIN_FREE_BYTES = 64 * 1024
"""Below this many free bytes a run does not start: an offsets file, a commit file, a state
file and a facts commit each need a few KB."""


def free_bytes(path: str | os.PathLike[str]) -> int | None:
    """The bytes this process may still write on the file system holding `path` (the nearest
    folder of it that exists), or None when nothing of it can be examined."""
    here = Path(path).absolute()
    for folder in (here, *here.parents):
        try:
            stats = os.statvfs(folder)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError:
            return None
        blocks = stats.f_bfree if os.geteuid() == 0 else stats.f_bavail  # root has the reserve
        return blocks * stats.f_frsize
    return None


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
