"""The batch reader of `mssql_cdc_snapshot` (docs/source.md, 'Snapshots').

`partitions()` records the stamp L on the driver before any row is read (`snapshotLsn` when
given, else the `latest` rule), then cuts the table by key into partitions or deals the
`snapshotChunks` round-robin. A key whose first column is an integer is cut by one-row seeks
(decision 1412); other keys by the bounds of the primary key's statistics histogram (decision
1448), or by NTILE tiles when the server shows none. `read()` reads each key range on an
executor and adds the stream's metadata columns: `_start_lsn = L`, `_operation = 0`,
`_commit_ts` = L's commit time.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSourceReader, InputPartition

from mssql_cdc.core import (
    Operation,
    chunk_file_name,
    format_commit_ts,
    initial_lsn,
    progress_file_name,
    with_collation,
    write_json_atomic,
)
from mssql_cdc.options import KeyBound, SourceConfig, check_chunk_order, open_folder
from mssql_cdc.source.table_schema import ResolvedTable, resolve_table
from mssql_cdc.sqlserver import (
    Backend,
    ReadColumn,
    Reconnecting,
    call_with_retries,
    key_bounds,
    open_backend,
)

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["CdcSnapshotReader", "SnapshotPartition", "read_snapshot"]

_log = logging.getLogger("mssql_cdc.source.formats")

# How often a task of a whole read rewrites its progress file, at most.
_PROGRESS_SECONDS = 1.0
# Types with no lossless text form cannot bound a partition: the whole table is one.
_UNSPLITTABLE = frozenset(
    {"sql_variant", "xml", "text", "ntext", "image", "geography", "geometry", "hierarchyid"}
)


@dataclass(frozen=True)
class SnapshotPartition(InputPartition):
    """Key ranges one task reads in turn: `(chunk or None, lo inclusive, hi exclusive)`."""

    capture_instance: str
    source_schema: str
    source_table: str
    stamp_lsn: str
    commit_ts: str | None
    time_zone: str
    keys: tuple[str, ...]
    ranges: tuple[tuple[int | None, KeyBound, KeyBound], ...]
    index: int = 0  # names a whole read's progress file


def _cut(bounds: Sequence[KeyBound]) -> list[tuple[int | None, KeyBound, KeyBound]]:
    edges: list[KeyBound] = [None, *bounds, None]
    return [(None, edges[i], edges[i + 1]) for i in range(len(edges) - 1)]


class CdcSnapshotReader(DataSourceReader):
    """Plans key-range partitions on the driver and reads them on executors."""

    def __init__(
        self, config: SourceConfig, columns: Sequence[ReadColumn], num_partitions: int
    ) -> None:
        self._config = config
        self._columns = tuple(columns)
        self._num_partitions = num_partitions

    def partitions(self) -> Sequence[InputPartition]:
        slot = Reconnecting(lambda: open_backend(self._config), lambda b: b.close())
        try:
            return call_with_retries("snapshot partitions()", slot, self._plan)
        finally:
            slot.drop()

    def _plan(self, backend: Backend) -> list[SnapshotPartition]:
        config = self._config
        table = resolve_table(backend.catalog, config.capture_instance)
        stamp = config.snapshot_lsn or initial_lsn(
            "latest",
            capture_instance=table.instance.name,
            max_lsn=backend.planner.max_lsn(),
            oldest_min_lsn=None,
            oldest_start_lsn=None,
            start_lsn=table.instance.start_lsn,
        )
        zone = backend.catalog.resolve_time_zone(config.source_time_zone)
        commit_ts = format_commit_ts(backend.planner.commit_time(stamp, zone)) or None
        keys = tuple(config.snapshot_keys or table.instance.index_columns)
        groups = self._groups(backend, table, keys)
        return [
            SnapshotPartition(
                table.instance.name,
                table.source_schema,
                table.source_table,
                stamp,
                commit_ts,
                zone,
                keys,
                tuple(group),
                index,
            )
            for index, group in enumerate(groups)
        ]

    def _groups(
        self, backend: Backend, table: ResolvedTable, keys: tuple[str, ...]
    ) -> list[list[tuple[int | None, KeyBound, KeyBound]]]:
        n = self._num_partitions
        chunks = self._config.snapshot_chunks
        schema, name = table.source_schema, table.source_table
        columns = backend.snapshots.table_columns(schema, name)
        types = {c.name: c.sql_type for c in columns}
        if chunks is not None:
            collated = {c.name: with_collation(c.sql_type, c.collation) for c in columns}
            check_chunk_order(chunks, keys, [collated.get(k) for k in keys])
            width = max(1, min(n, len(chunks)))
            groups: list[list[tuple[int | None, KeyBound, KeyBound]]] = [[] for _ in range(width)]
            for i, chunk in enumerate(chunks):
                groups[i % width].append((chunk.chunk, chunk.lo, chunk.hi))
            return groups
        if not keys or n == 1 or any(types.get(k) in _UNSPLITTABLE for k in keys):
            return [[(None, None, None)]]
        bounds = key_bounds(backend.snapshots, schema, name, keys, n, first_type=types.get(keys[0]))
        return [[r] for r in _cut(bounds)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, SnapshotPartition):
            raise TypeError(f"mssql_cdc_snapshot reads SnapshotPartitions, not {type(partition)}")
        return read_snapshot(self._config, self._columns, partition)


def read_snapshot(
    config: SourceConfig,
    columns: Sequence[ReadColumn],
    partition: SnapshotPartition,
    *,
    progress: bool = True,
) -> Iterator[pa.RecordBatch]:
    """Yield the rows of `partition`'s key ranges, in turn, with the stream's metadata columns.

    `progress`: a whole read with a metrics folder writes progress files there (the batch
    format's driver reads them); the stream's own snapshot writes none.
    """
    with closing(open_backend(config)) as backend:
        for chunk, lo, hi in partition.ranges:
            yield from _read_range(
                config, columns, backend, partition, chunk, lo, hi, progress=progress
            )


def _read_range(
    config: SourceConfig,
    columns: Sequence[ReadColumn],
    backend: Backend,
    part: SnapshotPartition,
    chunk: int | None,
    lo: KeyBound,
    hi: KeyBound,
    *,
    progress: bool,
) -> Iterator[pa.RecordBatch]:
    started = time.perf_counter()
    rows = size = 0
    # A whole read with a metrics folder tells the driver how far it is.
    folder = config.metrics_path if chunk is None and progress else None
    reported = started
    for batch in backend.snapshots.read_table(
        part.source_schema,
        part.source_table,
        columns=columns,
        keys=part.keys,
        lo=lo,
        hi=hi,
        batch_rows=config.arrow_batch_size,
    ):
        out = _with_metadata(batch, part, chunk, include_command_id=config.include_command_id)
        rows += out.num_rows
        size += out.nbytes
        if folder is not None and time.perf_counter() - reported >= _PROGRESS_SECONDS:
            reported = time.perf_counter()
            _write_progress(folder, part.index, rows, done=False)
        yield out
    if folder is not None:
        _write_progress(folder, part.index, rows, done=True)
    if chunk is not None and config.metrics_path is not None:
        record: dict[str, Any] = {
            "kind": "chunk",
            "chunk": chunk,
            "rows": rows,
            "bytes": size,
            "seconds": round(time.perf_counter() - started, 6),
            "stamp_lsn": part.stamp_lsn,
            "high_lsn": backend.planner.max_lsn(),
        }
        write_json_atomic(
            config.metrics_path,
            chunk_file_name(chunk),
            record,
            open_folder(config.metrics_path, config.store),
        )


def _write_progress(folder: str, partition: int, rows: int, *, done: bool) -> None:
    # A whole read's progress folder is the driver's temporary folder, never a store.
    record = {"kind": "progress", "partition": partition, "rows": rows, "done": done}
    write_json_atomic(folder, progress_file_name(partition), record)


def _with_metadata(
    batch: pa.RecordBatch,
    part: SnapshotPartition,
    chunk: int | None,
    *,
    include_command_id: bool,
) -> pa.RecordBatch:
    import pyarrow as pa

    n = batch.num_rows
    stamp_time = None if part.commit_ts is None else datetime.fromisoformat(part.commit_ts)
    arrays: list[pa.Array] = [
        pa.array([part.capture_instance] * n, pa.string()),
        pa.array([part.stamp_lsn] * n, pa.string()),
        pa.nulls(n, pa.string()),
        pa.array([int(Operation.SNAPSHOT)] * n, pa.int32()),
    ]
    names = ["_capture_instance", "_start_lsn", "_seqval", "_operation"]
    if include_command_id:
        arrays.append(pa.nulls(n, pa.int32()))
        names.append("_command_id")
    arrays.append(pa.array([stamp_time] * n, pa.timestamp("us")))
    names.append("_commit_ts")
    arrays += batch.columns
    names += batch.schema.names
    if chunk is not None:
        arrays.append(pa.array([chunk] * n, pa.int32()))
        names.append("_chunk")
    return pa.RecordBatch.from_arrays(arrays, names=names)
