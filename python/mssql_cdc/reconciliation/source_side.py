"""The source table as of one LSN: its current rows, corrected by the changes committed after.

Every question is answered from the table as it is now, one key range at a time, read between
two reads of the newest captured LSN. The change rows after the reconcile's LSN `at` up to the
second say, per key they touch, its row at `at` (its first change after `at`: none before an
insert, else that change's before-image or deleted row) and its row at each later LSN. A range's
digest is its digest as read, minus the touched keys' rows as read, plus their rows at `at`;
when a key of the range changed during the read (so what the read saw of it is unknown) the
range is read again, and after three tries its keys are read one by one, where every changed
key's row at `at` replaces whatever the read saw. Decision 1101 weighs this against comparing at
the newest LSN. A sampled side (`sample_below`) asks the server for the sampled keys only and
records the changes of those keys only (decision 1376).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

from mssql_cdc.core import Operation, TileDigest, lsn, row_digest
from mssql_cdc.errors import DataLossError
from mssql_cdc.options import KeyBound
from mssql_cdc.reconciliation.tile_narrowing import Key, KeyRange, in_range
from mssql_cdc.sqlserver import ChangeRangeReader, ChunkPlanner, ReadColumn, TileHasher

__all__ = ["SourceAsOf", "SourceTable"]

_ATTEMPTS = 3
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
    key_types: tuple[str | None, ...] = ()  # a character key's with its collation


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
        sample_below: int | None = None,
        fraction: float = 1.0,
    ) -> None:
        self._table = table
        self._sample_below = sample_below
        self._fraction = fraction  # the share of the keys sample_below keeps
        self._at = lsn.normalize(at)
        self._tiles, self._chunks, self._changes = tiles, chunks, changes
        self._read_upto = self._at
        self.settled_at: str = self._at  # the newest LSN whose changes are recorded
        self._at_rows: dict[Key, int | None] = {}  # a touched key's row digest at `at`
        self._images: dict[Key, list[tuple[str, int | None]]] = {}  # its images after, by LSN
        self._key_positions = [[c.name for c in table.columns].index(k) for k in table.keys]
        self._key_types = table.key_types or tuple(
            table.columns[p].sql_type for p in self._key_positions
        )

    def _window(self, read: Callable[[], _T]) -> tuple[_T, str | None, str | None]:
        """`read()`, the newest LSN before and after it; the changes up to `after` recorded."""
        before = self._changes.max_lsn()
        value = read()
        after = self._changes.max_lsn()
        if after is not None and lsn.compare(after, self._read_upto) > 0:
            self._fold(after)
        return value, before, after

    def _moved_during(self, key_range: KeyRange, before: str | None, after: str | None) -> bool:
        """Whether a key of the range changed between `before` and `after` (during a read)."""
        if before == after or after is None:
            return False
        return any(
            in_range(key, key_range, self._key_types)
            and any(
                (before is None or lsn.compare(at, before) > 0) and lsn.compare(at, after) <= 0
                for at, _ in images
            )
            for key, images in self._images.items()
        )

    def _fold(self, upto: str) -> None:
        """Record the change rows in (read_upto, upto] per key they touch."""
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
                if self._sample_below is not None and row_digest(key) >= self._sample_below:
                    continue  # a key outside the sample
                gone = operation in (Operation.DELETE, Operation.UPDATE_BEFORE)
                if key not in self._at_rows:  # its first change says what it was at `at`
                    self._at_rows[key] = (
                        None if operation == Operation.INSERT else row_digest(values)
                    )
                    self._images[key] = []
                image = None if gone else row_digest(values)
                self._images[key].append((str(data["_start_lsn"][i]), image))
        self._read_upto = lsn.Lsn(upto)
        self.settled_at = self._read_upto

    def _corrections(
        self, key_range: KeyRange, read_at: str | None
    ) -> list[tuple[Key, int | None, int | None]]:
        """(key, row now as read, row at `at`) of the keys in the range changed by `read_at`."""
        out = []
        for key, images in self._images.items():
            if read_at is None or not in_range(key, key_range, self._key_types):
                continue
            seen = [image for at, image in images if lsn.compare(at, read_at) <= 0]
            if seen:
                out.append((key, seen[-1], self._at_rows[key]))
        return out

    def digests(self, ranges: Sequence[KeyRange]) -> list[TileDigest]:
        t = self._table
        out = []
        for key_range in ranges:  # one read each: a short read is rarely crossed by a commit
            read = partial(
                self._tiles.range_digests,
                t.schema,
                t.table,
                columns=t.columns,
                keys=t.keys,
                ranges=[key_range],
                sample_below=self._sample_below,
            )
            for _ in range(_ATTEMPTS):
                (digest,), before, after = self._window(read)
                if not self._moved_during(key_range, before, after):
                    break
            else:  # a busy range: its keys one by one, where each changed key's row is known
                out.append(TileDigest.of(self.keyed(key_range).values()))
                continue
            for _, now, then in self._corrections(key_range, after):
                if now is not None:
                    digest = digest.minus(TileDigest(1, now))
                if then is not None:
                    digest = digest.plus(TileDigest(1, then))
            out.append(digest)
        return out

    def keyed(self, key_range: KeyRange) -> dict[Key, int]:
        """Each key's row digest at `at`: as read, or, for a key changed by the end of the
        read, its row at `at` from its first change, whatever the read saw of it."""
        t = self._table
        lo, hi = key_range
        rows, _, after = self._window(
            partial(
                self._tiles.key_digests,
                t.schema,
                t.table,
                columns=t.columns,
                keys=t.keys,
                lo=lo,
                hi=hi,
                sample_below=self._sample_below,
            )
        )
        for key, _, then in self._corrections(key_range, after):
            if then is None:
                rows.pop(key, None)
            else:
                rows[key] = then
        return rows

    def key_at(self, key_range: KeyRange, position: int) -> KeyBound:
        """The key `position` sampled keys into the range: counted over every key, a sampled
        position is scaled by the sample's share, so a split lands near the middle."""
        t = self._table
        if self._sample_below is not None:
            position = int(position / self._fraction)
        return self._chunks.key_at(
            t.schema, t.table, list(t.keys), key_range[0], inclusive=True, position=position
        )
