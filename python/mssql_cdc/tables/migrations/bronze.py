"""Bronze migrations. Base shape (version 0): output columns, captured columns, `_batch_id`."""

from __future__ import annotations

from mssql_cdc.tables.migrations import Migration, NewColumn

__all__ = ["MIGRATIONS"]

MIGRATIONS: list[Migration] = [
    Migration(
        "snapshot_columns",
        adds=(
            NewColumn(
                "_snapshot",
                "STRING",
                "Snapshot LSN S of a snapshot row (equal to _start_lsn on whole snapshot rows); "
                "NULL on change rows",
            ),
            NewColumn(
                "_chunk",
                "INT",
                "Chunk number (0-based) of a chunked snapshot row; NULL on change and whole "
                "snapshot rows",
            ),
        ),
        comments={
            "_start_lsn": "Commit LSN of the change, shared by a transaction's rows; the snapshot "
            "LSN S on whole snapshot rows; the wave's stamp L (L >= S) on chunk rows",
        },
    ),
]
