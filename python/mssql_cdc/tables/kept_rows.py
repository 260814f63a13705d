"""The rows of the library's bookkeeping tables kept in memory, brought up to date from the
commits written since (decision 1453).

Every stream of a `fan_out` job reads the facts table when it starts (its checkpoint's owner,
its sink's newest batch) and every stream appends to it, so reading it whole each time cost
each stream O(files): the job's start grew with the square of its table count. A facts or
control table (its `mssql_cdc.kind` property says so) at a local path is read once; a later
read at a newer version reads only the files the commits since added, when every one of them
is a blind append (`add` actions of new data, a `txn`, a `commitInfo`) or a compaction (files
rewritten with `dataChange` false: the same rows). Any other commit (a delete, a schema
change), a table created again (another table id), a commit file gone or changed, or a file
laid out otherwise than plain Parquet columns (column mapping, partitions, deletion vectors)
reads the table whole again. A table larger than MAX_KEPT_BYTES is read, never kept.

The kept rows are held in one chunk per column: a filter (and Arrow's size count) costs per
chunk, and a read gives a chunk per Parquet file, so at 500 streams a facts table of 500 files
cost each read a quarter of a second to filter; merged, 2 ms.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mssql_cdc.tables.commit_files import CommitSummary, added_files, commit_file, summarize
from mssql_cdc.tables.definitions import KIND_PROPERTY
from mssql_cdc.tables.shared_tables import FileMark, commit_mark

if TYPE_CHECKING:
    import pyarrow as pa
    from deltalake import DeltaTable

__all__ = ["KEPT_KINDS", "MAX_KEPT_BYTES", "forget_rows", "kept_rows"]

KEPT_KINDS = frozenset({"facts", "control"})  # small by design: a row per batch or event
MAX_KEPT_BYTES = 64 * 1024 * 1024  # per table; a million facts rows is about this
_MAX_TABLES = 16
_MAX_COMMITS = 1_000  # more commits since than this: the whole table is read again
_BLIND_APPEND = frozenset({"commitInfo", "txn", "add"})
_MAX_CHUNKS = 8  # more chunks than this (a chunk per file appended since): merged into one


@dataclass(frozen=True, slots=True)
class _Rows:
    table_id: str
    version: int
    mark: FileMark
    data: pa.Table
    nbytes: int  # data.nbytes, kept: Arrow counts it chunk by chunk


_kept: OrderedDict[str, _Rows] = OrderedDict()
_lock = threading.Lock()


def kept_rows(location: str, table: DeltaTable) -> pa.Table | None:
    """Every row of `table` (at local path `location`, as of its loaded version), from memory
    and the files its commits since the kept version added; None when this table is not kept
    (not a facts or control table, or laid out otherwise), so the caller reads it itself.

    The caller holds `table` at one version meanwhile (`shared_tables.using_table`).
    """
    metadata = table.metadata()
    configuration = metadata.configuration
    if configuration.get(KIND_PROPERTY) not in KEPT_KINDS or metadata.partition_columns:
        return None
    if configuration.get("delta.columnMapping.mode", "none").lower() != "none":
        return None
    version, table_id = int(table.version()), str(metadata.id)
    mark = commit_mark(location, version)
    with _lock:
        before = _kept.get(location)
    since = None if before is None else _since(location, before, table_id, version)
    if since is None:
        data = table.to_pyarrow_dataset().to_table(use_threads=False)
        nbytes = data.nbytes
    else:
        data, nbytes = since
    if nbytes > MAX_KEPT_BYTES:
        with _lock:
            _kept.pop(location, None)
        return data
    if data.num_columns and data.column(0).num_chunks > _MAX_CHUNKS:
        data = data.combine_chunks()  # at most 64 MiB: no string column's offsets overflow
    if mark is not None:
        with _lock:
            _kept[location] = _Rows(table_id, version, mark, data, nbytes)
            _kept.move_to_end(location)
            while len(_kept) > _MAX_TABLES:
                _kept.popitem(last=False)
    return data


def forget_rows() -> None:
    """Drop every kept table's rows (tests)."""
    with _lock:
        _kept.clear()


def _since(
    location: str, before: _Rows, table_id: str, version: int
) -> tuple[pa.Table, int] | None:
    """`before`'s rows with those of the blind appends up to `version`, and their size in
    bytes; None when another kind of commit, or anything unreadable, is in between."""
    if before.table_id != table_id or not before.version <= version <= before.version + (
        _MAX_COMMITS
    ):
        return None
    if commit_mark(location, before.version) != before.mark:
        return None  # the log was rewritten under the kept version
    added: list[str] = []
    for between in range(before.version + 1, version + 1):
        try:
            lines = commit_file(location, between)
            paths = _appended_files(summarize(between, lines), lines)
        except (OSError, ValueError):
            return None
        if paths is None:
            return None
        added.extend(os.path.join(location, p) for p in paths)
    if not added:
        return before.data, before.nbytes
    appended = _read_appended(before.data, added)
    return None if appended is None else (appended[0], before.nbytes + appended[1])


def _appended_files(summary: CommitSummary, lines: list[str]) -> list[str] | None:
    """The relative paths a blind append's commit added; none for a compaction (the same rows
    in other files); None for any other commit, and for a file outside the table's folder
    (read the table whole). A deletion vector comes only with a `remove` of the file it
    replaces, so a blind append has none."""
    if summary.rows_unchanged:
        return []
    if not summary.kinds <= _BLIND_APPEND or not summary.all_data_change:
        return None
    paths = added_files(lines)
    if any("://" in p or p.startswith("/") or ".." in p.split("/") for p in paths):
        return None
    return paths


def _read_appended(kept: pa.Table, files: list[str]) -> tuple[pa.Table, int] | None:
    """`kept` with the rows of Parquet `files` appended, cast to its schema, and the size of
    the rows appended; None when a file cannot be read so (a column missing, a type that does
    not cast)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    names = kept.schema.names
    parts = [kept]
    nbytes = 0
    for path in files:
        try:
            found = pq.read_table(path, columns=names, use_threads=False)
            parts.append(found.select(names).cast(kept.schema))
        except (OSError, KeyError, ValueError, pa.ArrowException):
            return None
        nbytes += parts[-1].nbytes
    return pa.concat_tables(parts), nbytes
