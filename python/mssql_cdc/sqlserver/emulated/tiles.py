"""TileHasher over an emulator file: the digests of `core.row_digest`, computed over its rows.

The in-process backend runs no SQL (HASHBYTES is its TDS front end's); it reads each range's
rows in key order, as the snapshot does, and digests them with the same definition the T-SQL
backend asks the server for, computed by the emulator's native code (each row's text, its hash,
and a tile's sum), so no row passes through Python (decision 1432). A sampled
read keeps the rows whose key digest (the same digest over the key columns alone) is below its
bound.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa

from mssql_cdc.core import TileDigest, value_text
from mssql_cdc.emulator import batch_row_digests, batch_tile_digest
from mssql_cdc.options import KeyBound
from mssql_cdc.sqlserver.emulated.snapshot import EmulatorSnapshotReader
from mssql_cdc.sqlserver.metadata import ReadColumn

__all__ = ["EmulatorTileHasher", "batch_digests", "batch_tile"]

_BATCH_ROWS = 65_536


def _texts(column: pa.Array) -> pa.Array:
    """A column's canonical texts as `core.row_digest` defines them, NULL for a NULL value: for
    the types the native digest does not read itself (a zoned or non-microsecond time)."""
    return pa.array([None if v is None else value_text(v) for v in column.to_pylist()], pa.string())


def _native_ready(column: pa.Array) -> pa.Array:
    """The column as the native digest takes it: integers, booleans, text, decimal128, date32
    and timestamps in microseconds without a zone as they are, any other type as its text."""
    kind = column.type
    if (
        pa.types.is_integer(kind)
        or pa.types.is_boolean(kind)
        or pa.types.is_string(kind)
        or pa.types.is_large_string(kind)
        or pa.types.is_decimal128(kind)
        or pa.types.is_date32(kind)
        or (pa.types.is_timestamp(kind) and kind.unit == "us" and kind.tz is None)
    ):
        return column
    return _texts(column)


def _native_batch(batch: pa.RecordBatch) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [_native_ready(c) for c in batch.columns], names=batch.schema.names
    )


def batch_digests(batch: pa.RecordBatch) -> list[int]:
    """The row digests of a batch's rows, its columns in order, computed natively by the
    emulator (each row's text and its hash, as `core.row_digest` defines them)."""
    return batch_row_digests(_native_batch(batch))


def batch_tile(batch: pa.RecordBatch) -> TileDigest:
    """A batch's row count and its rows' digests summed modulo 2**64, computed natively."""
    rows, digest = batch_tile_digest(_native_batch(batch))
    return TileDigest(rows, digest)


class EmulatorTileHasher:
    """TileHasher over one emulator file, reading through its SnapshotReader."""

    def __init__(self, table: EmulatorSnapshotReader) -> None:
        self._table = table

    def _batches(
        self,
        source_schema: str,
        source_table: str,
        columns: Sequence[ReadColumn],
        keys: Sequence[str],
        lo: KeyBound,
        hi: KeyBound,
        sample_below: int | None = None,
    ) -> Iterator[pa.RecordBatch]:
        batches = self._table.read_table(
            source_schema,
            source_table,
            columns=columns,
            keys=keys,
            lo=lo,
            hi=hi,
            batch_rows=_BATCH_ROWS,
        )
        if sample_below is None:
            yield from batches
            return
        positions = [[c.name for c in columns].index(k) for k in keys]
        for batch in batches:
            key_batch = pa.RecordBatch.from_arrays(
                [batch.column(p) for p in positions], names=list(keys)
            )
            kept = [d < sample_below for d in batch_digests(key_batch)]
            yield batch.filter(pa.array(kept, pa.bool_()))

    def _rows(
        self,
        source_schema: str,
        source_table: str,
        columns: Sequence[ReadColumn],
        keys: Sequence[str],
        lo: KeyBound,
        hi: KeyBound,
        sample_below: int | None,
    ) -> Iterator[tuple[tuple[object, ...], int]]:
        positions = [[c.name for c in columns].index(k) for k in keys]
        for batch in self._batches(
            source_schema, source_table, columns, keys, lo, hi, sample_below
        ):
            digests = batch_digests(batch)
            found = zip(*(batch.column(p).to_pylist() for p in positions), strict=True)
            yield from zip(found, digests, strict=True)

    def range_digests(
        self,
        source_schema: str,
        source_table: str,
        *,
        columns: Sequence[ReadColumn],
        keys: Sequence[str],
        ranges: Sequence[tuple[KeyBound, KeyBound]],
        sample_below: int | None = None,
    ) -> list[TileDigest]:
        out = []
        for lo, hi in ranges:
            tile = TileDigest(0, 0)
            for batch in self._batches(
                source_schema, source_table, columns, keys, lo, hi, sample_below
            ):
                tile = tile.plus(batch_tile(batch))
            out.append(tile)
        return out

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
    ) -> dict[tuple[object, ...], int]:
        return dict(self._rows(source_schema, source_table, columns, keys, lo, hi, sample_below))

    def close(self) -> None:
        pass  # the SnapshotReader is the backend's, closed with its other views
