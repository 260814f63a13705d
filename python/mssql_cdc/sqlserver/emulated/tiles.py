"""TileHasher over an emulator file: the digests of `core.row_digest`, computed over its rows.

The in-process backend runs no SQL (HASHBYTES is its TDS front end's); it reads each range's
rows in key order, as the snapshot does, and digests them with the same definition the T-SQL
backend asks the server for. A sampled read keeps the rows whose key digest (the same digest
over the key columns alone) is below its bound.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from mssql_cdc.core import NULL_FIELD, SEPARATOR, VALUE_MARK, TileDigest, value_text
from mssql_cdc.options import KeyBound
from mssql_cdc.sqlserver.emulated.snapshot import EmulatorSnapshotReader
from mssql_cdc.sqlserver.metadata import ReadColumn

__all__ = ["EmulatorTileHasher", "batch_digests"]

_BATCH_ROWS = 65_536


def _texts(column: pa.Array) -> pa.Array:
    """The column's canonical texts as `core.row_digest` defines them; NULL for a NULL value."""
    kind = column.type
    if pa.types.is_integer(kind) or pa.types.is_date32(kind):
        return pc.cast(column, pa.string())
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return column
    if pa.types.is_boolean(kind):
        return pc.if_else(column, "1", "0")
    if pa.types.is_decimal(kind) and kind.scale <= 6:  # Arrow writes 1E-7 from scale 7 on
        return pc.cast(column, pa.string())
    return pa.array([None if v is None else value_text(v) for v in column.to_pylist()], pa.string())


def batch_digests(batch: pa.RecordBatch) -> list[int]:
    """The row digests of a batch's rows, its columns in order: the texts built by Arrow, the
    hash by hashlib (as `core.row_digest` defines it and computes it row by row)."""
    fields = [
        pc.fill_null(pc.binary_join_element_wise(VALUE_MARK, _texts(c), ""), NULL_FIELD)
        for c in batch.columns
    ]
    rows = pc.binary_join_element_wise(*fields, SEPARATOR) if fields else pa.nulls(0, pa.string())
    return [
        int.from_bytes(hashlib.sha256(text.encode("utf-16-le")).digest()[:8], "big")
        for text in rows.to_pylist()
    ]


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
        return [
            TileDigest.of(
                d
                for batch in self._batches(
                    source_schema, source_table, columns, keys, lo, hi, sample_below
                )
                for d in batch_digests(batch)
            )
            for lo, hi in ranges
        ]

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
