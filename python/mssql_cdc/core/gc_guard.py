"""What `mssql-cdc gc` may remove: only what Spark or the library wrote (decision 1311).

`plan_gc` picks entries by name; before anything is removed, each one is looked into. A
generation's Spark checkpoint folder (`_generations/<n>`) may hold only Spark's checkpoint
entries and the default metrics folder; generation 0's root entries must be of the kind Spark
writes; a metrics folder (under `metricsPath` or the default `_mssql_cdc_metrics`) must pass
the sink's own rule (`check_cleanable_folder`) and hold only the library's metrics, chunk,
progress and event files (and backfill's `_backfill` folder of them). Every entry that fails
is collected, and one `ConfigError` names them: gc then removes nothing at all.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator

from mssql_cdc.core.folders import check_cleanable_folder
from mssql_cdc.core.metrics_files import is_library_file
from mssql_cdc.errors import ConfigError

__all__ = ["METRICS_FOLDER", "check_removable"]

METRICS_FOLDER = "_mssql_cdc_metrics"

# Spark's checkpoint entries, by kind; `.metadata.<id>.tmp` is a write of `metadata` cut short.
_SPARK_FILES = frozenset({"metadata", ".metadata.crc"})
_SPARK_FOLDERS = frozenset({"offsets", "commits", "sources", "state"})
_BACKFILL = "_backfill"
_SHOWN = 5


def _is_spark_file(name: str) -> bool:
    return name in _SPARK_FILES or (name.startswith(".metadata.") and name.endswith(".tmp"))


def _entries(path: str) -> Iterator[tuple[str, str, bool, bool]]:
    """(name, full path, is a folder, is a link) of each entry of `path`, links not followed."""
    with os.scandir(path) as found:
        listed = [(e.name, e.path, e.is_dir(follow_symlinks=False), e.is_symlink()) for e in found]
    yield from sorted(listed)


def _metrics_strangers(path: str, *, nested: bool = False) -> list[str]:
    strangers = []
    for name, full, is_dir, is_link in _entries(path):
        if is_link:
            strangers.append(f"{full} (a symbolic link)")
        elif is_dir and name == _BACKFILL and not nested:
            strangers.extend(_metrics_strangers(full, nested=True))
        elif is_dir or not is_library_file(name):
            strangers.append(full)
    return strangers


def _metrics_folder(path: str, what: str) -> list[str]:
    check_cleanable_folder(path, what=what)
    return _metrics_strangers(path)


def _generation_strangers(path: str) -> list[str]:
    strangers = []
    for name, full, is_dir, is_link in _entries(path):
        strangers.extend(_entry_strangers(name, full, is_dir=is_dir, is_link=is_link))
    return strangers


def _entry_strangers(name: str, full: str, *, is_dir: bool, is_link: bool) -> list[str]:
    """What in one entry of a Spark checkpoint folder neither Spark nor the library wrote."""
    if is_link:
        return [f"{full} (a symbolic link)"]
    if name == METRICS_FOLDER and is_dir:
        return _metrics_folder(full, "the default metrics folder")
    if (name in _SPARK_FOLDERS and is_dir) or (_is_spark_file(name) and not is_dir):
        return []
    return [full]


def _strangers(path: str, *, folder_kind: str) -> list[str]:
    try:
        kind = os.lstat(path).st_mode
    except FileNotFoundError:
        return []  # already removed, by another gc
    is_dir, is_link = stat.S_ISDIR(kind), stat.S_ISLNK(kind)
    if folder_kind == "generation":
        return _generation_strangers(path) if is_dir else [path]
    if folder_kind == "metrics":
        return _metrics_folder(path, "a metrics folder") if is_dir else [path]
    return _entry_strangers(os.path.basename(path), path, is_dir=is_dir, is_link=is_link)


def check_removable(targets: list[tuple[str, str]]) -> None:
    """Refuse, before anything is removed, when a target holds what gc did not make.

    Args:
        targets: (path, kind) pairs: kind "generation" for a `_generations/<n>` folder,
            "zero" for one of generation 0's root entries, "metrics" for a metrics folder
            under `metricsPath`.
    Raises:
        ConfigError: a target holds a file, folder or link that neither Spark nor the library
            writes, cannot be listed, or is a folder the sink would refuse to clean.
    """
    strangers: list[str] = []
    for path, folder_kind in targets:
        try:
            strangers.extend(_strangers(path, folder_kind=folder_kind))
        except FileNotFoundError:
            continue  # removed under us by another gc: nothing of it is left to protect
        except OSError as exc:
            raise ConfigError(
                f"gc cannot look into {exc.filename or path} ({exc.strerror or exc}), so it "
                "cannot tell that only Spark's and mssql-cdc's files are there; nothing was "
                "removed. Make it readable, or check the paths gc was given, and run gc again"
            ) from None
    if strangers:
        shown = ", ".join(strangers[:_SHOWN])
        more = f" and {len(strangers) - _SHOWN} more" if len(strangers) > _SHOWN else ""
        raise ConfigError(
            f"gc refuses to remove what neither Spark nor mssql-cdc wrote: {shown}{more}; "
            "nothing was removed. Check --metrics-path and --app-id name the stream's own "
            "folders; if they do, move those files out and run gc again"
        )
