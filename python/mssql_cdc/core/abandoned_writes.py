"""The first checkpoint write a killed process left half done, removed before a query starts.

Spark writes each file of a checkpoint's `offsets/` and `commits/` logs as a hidden temporary
file (`.<batch>.<uuid>.tmp`, with a checksum `..<batch>.<uuid>.tmp.crc`) that it renames into
place. A driver killed between the two leaves the temporary file behind. Past the first
batch Spark ignores it; at batch 0 Spark 4 counts it and refuses the checkpoint for good
(STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY, "should be empty on batch 0"), so every restart of
the stream fails. `drop_abandoned_first_writes` removes those files from a log folder that
holds no batch file yet, and only those (decision 1404).
"""

from __future__ import annotations

import logging
import os
import re

__all__ = ["drop_abandoned_first_writes"]

log = logging.getLogger(__name__)

_LOGS = ("offsets", "commits")
_BATCH = re.compile(r"^\d+$")
# Hadoop's atomic create: ".<name>.<uuid>.tmp", and its checksum file ".<that name>.crc".
_TEMPORARY = re.compile(r"^\.{1,2}\d+\.[0-9A-Fa-f-]+\.tmp(\.crc)?$")


def drop_abandoned_first_writes(spark_checkpoint: str | os.PathLike[str]) -> list[str]:
    """Remove the temporary files of an unfinished first write from the checkpoint's offsets
    and commits folders, where neither holds a batch file yet; return the paths removed.

    A folder with any batch file is left alone, as is every other file: only a write that
    never completed is undone, and the batch it was writing is planned again.
    """
    removed: list[str] = []
    for name in _LOGS:
        folder = os.path.join(os.fspath(spark_checkpoint), name)
        try:
            entries = os.listdir(folder)
        except (FileNotFoundError, NotADirectoryError):
            continue
        if any(_BATCH.match(entry) for entry in entries):
            continue
        for entry in sorted(entries):
            if _TEMPORARY.match(entry):
                path = os.path.join(folder, entry)
                os.remove(path)
                removed.append(path)
    if removed:
        log.warning(
            "%s: removed %s, left by a process killed during its first checkpoint write "
            "(Spark refuses a first batch over them)",
            spark_checkpoint,
            ", ".join(os.path.basename(p) for p in removed),
        )
    return removed
