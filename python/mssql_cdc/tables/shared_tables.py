"""One open deltalake table per local path, shared by the process and brought up to date on
each use (decision 1452).

Opening a Delta table replays its log from the newest checkpoint: up to a hundred commit
files for a table deltalake checkpoints, read again by every open. The facts table is opened
several times by every stream of a `fan_out` job (its start checks, its sink's first batch,
each batch's facts commit), and every stream adds commits to it, so opening it afresh each
time cost the job more than its Spark appends did. Here a table once opened is kept and
`update_incremental` reads only the commits written since.

The kept table is trusted only while the commit file of the version it holds is the same
file (inode, size and modification time): a table deleted and created again at the path,
or a log rewritten under it, is opened afresh. A borrower holds the table's lock for the
whole use, so no other thread moves it to another version meanwhile; any error drops it, and
so does a commit that did not land on the next version (another writer's came between).
Only local paths are kept (a stat of an object store is a request); others open each time.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mssql_cdc.tables.reference import (
    TableOutOfReach,
    TableRef,
    deltalake_errors,
    is_local,
    open_table,
)

if TYPE_CHECKING:
    from deltalake import DeltaTable
    from pyspark.sql import SparkSession

__all__ = [
    "MAX_KEPT",
    "FileMark",
    "commit_mark",
    "exists_here",
    "forget_tables",
    "using_table",
]

# Tables kept at once, least recently used dropped first: a fan_out job's bronze tables and
# its facts table, with room to spare; each keeps its file list, kilobytes per thousand files.
MAX_KEPT = 1_024

FileMark = tuple[int, int, int]  # inode, size, modification time in nanoseconds


@dataclass(slots=True)
class _Kept:
    lock: threading.RLock = field(default_factory=threading.RLock)
    table: DeltaTable | None = None
    mark: FileMark | None = None  # of the commit file of `table`'s version


_kept: OrderedDict[str, _Kept] = OrderedDict()
_kept_lock = threading.Lock()


@contextlib.contextmanager
def using_table(ref: TableRef) -> Iterator[DeltaTable]:
    """The newest version of the Delta table at `ref`'s path, for the `with` block only.

    Raises:
        TableOutOfReach: as `reference.open_table`.
    """
    location = ref.location
    if location is None or not is_local(ref) or not location.startswith("/"):
        yield open_table(ref)
        return
    kept = _entry(location)
    with kept.lock:
        table = _current(ref, kept)
        kept.table, kept.mark = None, None  # kept again only once the borrower is done
        before = _version(table)
        yield table
        # A commit of the borrower's own moves the table one version. Any more means another
        # writer's commit came first, which deltalake's state after the commit may not hold.
        after = _version(table)
        if before is None or after is None or after - before not in (0, 1):
            return
        kept.mark = commit_mark(location, after)
        kept.table = table if kept.mark is not None else None


def exists_here(spark: SparkSession, ref: TableRef) -> bool:
    """`ref.exists(spark)`, a local path answered from its shared table: a Delta table is there
    when deltalake opens one."""
    if ref.location is None or not is_local(ref) or not ref.location.startswith("/"):
        return ref.exists(spark)
    try:
        with using_table(ref):
            return True
    except TableOutOfReach:
        return False


def forget_tables() -> None:
    """Drop every kept table (tests; a process that rewrote logs by hand)."""
    with _kept_lock:
        _kept.clear()


def _entry(location: str) -> _Kept:
    with _kept_lock:
        kept = _kept.get(location)
        if kept is None:
            kept = _kept[location] = _Kept()
            while len(_kept) > MAX_KEPT:
                _kept.popitem(last=False)
        else:
            _kept.move_to_end(location)
        return kept


def _current(ref: TableRef, kept: _Kept) -> DeltaTable:
    """The kept table brought up to date, or the table opened afresh."""
    table, location = kept.table, ref.location
    if table is not None and location is not None and kept.mark == _version_mark(location, table):
        try:
            table.update_incremental()
            return table
        except deltalake_errors():
            pass  # opened afresh below, which says why if it fails too
    return open_table(ref)


def _version(table: DeltaTable) -> int | None:
    try:
        return int(table.version())
    except deltalake_errors():
        return None


def _version_mark(location: str, table: DeltaTable) -> FileMark | None:
    """The identity of the commit file of `table`'s version; None when it cannot be read."""
    version = _version(table)
    return None if version is None else commit_mark(location, version)


def commit_mark(location: str, version: int) -> FileMark | None:
    """The identity of commit file `version` of the table at local path `location`: its inode,
    size and modification time; None when it cannot be read (gone, or never written)."""
    try:
        found = os.stat(os.path.join(location, "_delta_log", f"{version:020d}.json"))
    except OSError:
        return None
    return (found.st_ino, found.st_size, found.st_mtime_ns)
