"""The source table as of one LSN: its current rows, corrected by the changes committed after.

Decision 1101. Every question is answered from the table as it is now, read between two reads
of the newest captured LSN: when they differ, a commit landed during the read and it is asked
again. The change rows after the reconcile's LSN `at` up to that newest LSN then say, per key
they touch, its row now (the last change: gone after a delete) and its row at `at` (the first
change: absent before an insert, else that change's before-image or deleted row). A range's
digest is its current digest minus the touched keys' rows now plus their rows at `at`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from mssql_cdc.core import lsn
from mssql_cdc.core.operation import Operation
from mssql_cdc.core.row_digest import TileDigest, row_digest
from mssql_cdc.errors import DataLossError, MssqlCdcError
from mssql_cdc.options.declared_columns import KeyBound
from mssql_cdc.reconcile.narrow import Key, KeyRange, in_range
from mssql_cdc.sqlserver.metadata import ReadColumn
from mssql_cdc.sqlserver.protocols import ChangeRangeReader, ChunkPlanner, TileHasher

__all__ = ["SourceAsOf", "SourceTable"]

_ATTEMPTS = 5
_T = TypeVar("_T")
_BATCH_ROWS = 65_536


@dataclass(frozen=True, slots=True)
class SourceTable:
    """Which table and capture instance, and the columns compared (keys among them)."""

    capture_instance: str
    schema: str
    table: str
    columns: tuple[ReadColumn, ...]
    keys: tuple[str, ...]


@dataclass(slots=True)
class _Touched:
    now: int | None  # the key's row digest after the last change read; None: no row
    at: int | None  # its row digest at the reconcile's LSN; None: no row


class SourceAsOf:
    """A TileSide over the source table as of `at` (module docstring)."""

    def __init__(
        self,
        table: SourceTable,
        at: str,
        *,
        tiles: TileHasher,
        chunks: ChunkPlanner,
        changes: ChangeRangeReader,
    ) -> None:
        self._table = table
        self._at = lsn.normalize(at)
        self._tiles, self._chunks, self._changes = tiles, chunks, changes
        self._read_upto = self._at
        self._touched: dict[Key, _Touched] = {}
        self.settled_at: str = self._at  # the newest LSN whose changes are folded in
        self._key_positions = [[c.name for c in table.columns].index(k) for k in table.keys]

    def _settled(self, read: Callable[[], _T]) -> _T:
        for _ in range(_ATTEMPTS):
            before = self._changes.max_lsn()
            value = read()
            after = self._changes.max_lsn()
            if before == after:
                if after is not None and lsn.compare(after, self._read_upto) > 0:
                    self._fold(after)
                return value
        raise MssqlCdcError(
            f"{self._table.capture_instance}: reconcile could not read "
            f"[{self._table.schema}].[{self._table.table}] between two commits in "
            f"{_ATTEMPTS} attempts; rerun it when the source is quieter"
        )

    def _fold(self, upto: str) -> None:
        """Fold the change rows in (read_upto, upto] into the touched keys."""
        ci = self._table.capture_instance
        start = lsn.increment(self._read_upto)
        low = self._changes.min_lsn(ci)
        if low is not None and lsn.compare(low, start) > 0:
            raise DataLossError(
                f"{ci}: CDC cleanup deleted the changes after {self._read_upto} (min_lsn {low}), "
                "so reconcile cannot read the source as of the target's LSN; re-snapshot the "
                "stream (mssql-cdc resnapshot), or reconcile a target that is closer to the source",
                ci,
            )
        batches = self._changes.read_changes(
            ci,
            start,
            lsn.Lsn(upto),
            columns=self._table.columns,
            include_command_id=False,
            time_zone="UTC",
            batch_rows=_BATCH_ROWS,
        )
        names = [c.name for c in self._table.columns]
        for batch in batches:
            data = batch.to_pydict()
            for i, operation in enumerate(data["_operation"]):
                values = [data[n][i] for n in names]
                key = tuple(values[p] for p in self._key_positions)
                image = (
                    None
                    if operation in (Operation.DELETE, Operation.UPDATE_BEFORE)
                    else row_digest(values)
                )
                found = self._touched.get(key)
                if found is None:
                    before = None if operation == Operation.INSERT else row_digest(values)
                    self._touched[key] = _Touched(now=image, at=before)
                else:
                    found.now = image
        self._read_upto = lsn.Lsn(upto)
        self.settled_at = self._read_upto

    def digests(self, ranges: Sequence[KeyRange]) -> list[TileDigest]:
        t = self._table
        now = self._settled(
            lambda: self._tiles.range_digests(
                t.schema, t.table, columns=t.columns, keys=t.keys, ranges=ranges
            )
        )
        out = []
        for key_range, digest in zip(ranges, now, strict=True):
            for key, touched in self._touched.items():
                if in_range(key, key_range):
                    if touched.now is not None:
                        digest = digest.minus(TileDigest(1, touched.now))
                    if touched.at is not None:
                        digest = digest.plus(TileDigest(1, touched.at))
            out.append(digest)
        return out

    def keyed(self, key_range: KeyRange) -> dict[Key, int]:
        t = self._table
        lo, hi = key_range
        rows = self._settled(
            lambda: self._tiles.key_digests(
                t.schema, t.table, columns=t.columns, keys=t.keys, lo=lo, hi=hi
            )
        )
        for key, touched in self._touched.items():
            if in_range(key, key_range):
                if touched.at is None:
                    rows.pop(key, None)
                else:
                    rows[key] = touched.at
        return rows

    def key_at(self, key_range: KeyRange, position: int) -> KeyBound:
        t = self._table
        return self._chunks.key_at(
            t.schema, t.table, list(t.keys), key_range[0], inclusive=True, position=position
        )
