"""TileHasher over an emulator file: the digests of decision 1100, computed over its rows.

The emulator has no HASHBYTES; it reads each range's rows in key order, as the snapshot does,
and digests them in process with the same definition the T-SQL backend asks the server for.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from mssql_cdc.core.row_digest import TileDigest, row_digest
from mssql_cdc.options.declared_columns import KeyBound
from mssql_cdc.sqlserver.emulated.snapshot import EmulatorSnapshotReader
from mssql_cdc.sqlserver.metadata import ReadColumn

__all__ = ["EmulatorTileHasher"]

_BATCH_ROWS = 65_536


class EmulatorTileHasher:
    """TileHasher over one emulator file, reading through its SnapshotReader."""

    def __init__(self, table: EmulatorSnapshotReader) -> None:
        self._table = table

    def _rows(
        self,
        source_schema: str,
        source_table: str,
        columns: Sequence[ReadColumn],
        keys: Sequence[str],
        lo: KeyBound,
        hi: KeyBound,
    ) -> Iterator[tuple[tuple[object, ...], int]]:
        positions = [[c.name for c in columns].index(k) for k in keys]
        batches = self._table.read_table(
            source_schema,
            source_table,
            columns=columns,
            keys=keys,
            lo=lo,
            hi=hi,
            batch_rows=_BATCH_ROWS,
        )
        for batch in batches:
            for values in zip(*(c.to_pylist() for c in batch.columns), strict=True):
                yield tuple(values[p] for p in positions), row_digest(values)

    def range_digests(
        self,
        source_schema: str,
        source_table: str,
        *,
        columns: Sequence[ReadColumn],
        keys: Sequence[str],
        ranges: Sequence[tuple[KeyBound, KeyBound]],
    ) -> list[TileDigest]:
        return [
            TileDigest.of(
                d for _, d in self._rows(source_schema, source_table, columns, keys, lo, hi)
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
    ) -> dict[tuple[object, ...], int]:
        return dict(self._rows(source_schema, source_table, columns, keys, lo, hi))

    def close(self) -> None:
        pass  # the SnapshotReader is the backend's, closed with its other views
