"""The SQL Server seam: one narrow Protocol per caller, named after it.

The T-SQL backends (`mssql_cdc.sqlserver.tsql.backend`) and the emulator implement them
structurally. LSNs cross as canonical text; `min_lsn` returns the zero LSN for an unknown
instance and None while capture has not established it, as `sys.fn_cdc_get_min_lsn` does.
Commit times are naive UTC `datetime`s, converted by the backend from `time_zone`: "UTC", a
zone name, or a fixed offset "+HH:MM".
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from mssql_cdc.core import Tile, TileDigest, lsn
from mssql_cdc.sqlserver.metadata import (
    CapturedColumn,
    CaptureInstance,
    ChangeTableAccess,
    DdlEntry,
    ReadColumn,
    SessionStats,
    TableColumn,
)

if TYPE_CHECKING:
    import pyarrow as pa

    from mssql_cdc.options import KeyBound

__all__ = [
    "CaptureCatalog",
    "ChangeRangeReader",
    "ChunkPlanner",
    "SnapshotReader",
    "StreamPlanner",
    "TileHasher",
]


class StreamPlanner(Protocol):
    """What initialOffset(), latestOffset() and partitions() need on the driver."""

    def max_lsn(self) -> lsn.Lsn | None: ...
    def min_lsn(self, capture_instance: str) -> lsn.Lsn | None: ...
    def commit_time(self, at: lsn.Lsn, time_zone: str) -> datetime | None: ...
    def nth_commit_after(self, after: lsn.Lsn, n: int) -> lsn.Lsn | None: ...
    def split_points(
        self, capture_instance: str, from_lsn: lsn.Lsn, to_lsn: lsn.Lsn, n: int
    ) -> Sequence[Tile]: ...
    def close(self) -> None: ...


class CaptureCatalog(Protocol):
    """What schema() and the per-batch instance and DDL checks need on the driver."""

    def capture_instances(
        self, source_schema: str | None = None, source_table: str | None = None
    ) -> Sequence[CaptureInstance]: ...
    def instance_table(self, capture_instance: str) -> tuple[str, str] | None: ...
    def captured_columns(self, capture_instance: str) -> Sequence[CapturedColumn]: ...
    def ddl_history(
        self, capture_instance: str, after: lsn.Lsn, upto: lsn.Lsn
    ) -> Sequence[DdlEntry]: ...
    def change_table_access(self, capture_instance: str) -> ChangeTableAccess: ...
    def resolve_time_zone(self, setting: str) -> str: ...
    def close(self) -> None: ...


class ChangeRangeReader(Protocol):
    """What a partition reader needs on an executor: the changes of one closed LSN range.

    `read_changes` yields batches of the output schema (docs/source.md, 'Rows'): metadata columns,
    then `columns` in order; those in `null_columns` (not captured by this instance) read NULL.
    """

    def read_changes(
        self,
        capture_instance: str,
        from_lsn: lsn.Lsn,
        to_lsn: lsn.Lsn,
        *,
        columns: Sequence[ReadColumn],
        include_command_id: bool,
        time_zone: str,
        batch_rows: int,
        null_columns: Sequence[str] = (),
    ) -> Iterator[pa.RecordBatch]: ...
    def min_lsn(self, capture_instance: str) -> lsn.Lsn | None: ...
    def max_lsn(self) -> lsn.Lsn | None: ...
    def commit_time(self, at: lsn.Lsn, time_zone: str) -> datetime | None: ...
    def session_stats(self) -> SessionStats: ...
    def close(self) -> None: ...


class SnapshotReader(Protocol):
    """What the snapshot reader needs: the table's columns, key planning and its rows."""

    def table_columns(self, source_schema: str, source_table: str) -> Sequence[TableColumn]: ...
    def key_extent(
        self, source_schema: str, source_table: str, key: str
    ) -> tuple[int, int] | None: ...
    def key_tiles(
        self, source_schema: str, source_table: str, keys: Sequence[str], n: int
    ) -> Sequence[KeyBound]: ...
    def first_keys(
        self, source_schema: str, source_table: str, keys: Sequence[str], firsts: Sequence[int]
    ) -> Sequence[KeyBound]: ...
    def histogram_bounds(
        self, source_schema: str, source_table: str, keys: Sequence[str], n: int
    ) -> Sequence[KeyBound] | None: ...
    def read_table(
        self,
        source_schema: str,
        source_table: str,
        *,
        columns: Sequence[ReadColumn],
        keys: Sequence[str],
        lo: KeyBound,
        hi: KeyBound,
        batch_rows: int,
    ) -> Iterator[pa.RecordBatch]: ...
    def close(self) -> None: ...


class ChunkPlanner(Protocol):
    """What backfill()'s chunk planning needs (docs/snapshots.md, 'Chunked snapshots')."""

    def key_extent(
        self, source_schema: str, source_table: str, key: str
    ) -> tuple[int, int] | None: ...
    def key_buckets(
        self, source_schema: str, source_table: str, key: str, n: int, lo: int, hi: int
    ) -> Sequence[tuple[int, int, int]]: ...
    def key_at(
        self,
        source_schema: str,
        source_table: str,
        keys: Sequence[str],
        start: KeyBound,
        *,
        inclusive: bool,
        position: int,
    ) -> KeyBound: ...
    def row_count(self, source_schema: str, source_table: str) -> int | None: ...
    def close(self) -> None: ...


class TileHasher(Protocol):
    """What reconcile needs of the source table: row counts and digests of key ranges, and
    each key's row digest in a small range (the digest: mssql_cdc.core.row_digest).

    With `sample_below`, only the rows whose key digest (`core.row_digest` over the key
    columns alone, unsigned) is below it are counted and listed: a sampled reconcile's keys."""

    def range_digests(
        self,
        source_schema: str,
        source_table: str,
        *,
        columns: Sequence[ReadColumn],
        keys: Sequence[str],
        ranges: Sequence[tuple[KeyBound, KeyBound]],
        sample_below: int | None = None,
    ) -> list[TileDigest]: ...
    def key_digests(
        self,
        source_schema: str,
        source_table: str,
        *,
        columns: Sequence[ReadColumn],
        keys: Sequence[str],
        lo: KeyBound,
        hi: KeyBound,
        sample_below: int | None = None,
    ) -> dict[tuple[object, ...], int]: ...
    def close(self) -> None: ...
