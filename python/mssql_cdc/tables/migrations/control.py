"""Control table migrations. Base shape (version 0): `table_name`, `finalized_until`, `end_lsn`,
`end_commit_ts`, `updated_at`."""

from __future__ import annotations

from mssql_cdc.tables.migrations import Migration, NewColumn

__all__ = ["MIGRATIONS"]

MIGRATIONS: list[Migration] = [
    Migration(
        "silver_position",
        adds=(
            NewColumn("applied_lsn", "STRING", "Silver: highest bronze change LSN applied"),
            NewColumn(
                "snapshot_lsn", "STRING", "Silver: LSN of the snapshot it was last rebuilt from"
            ),
        ),
    ),
    Migration(
        "open_snapshots",
        adds=(
            NewColumn(
                "open_snapshot_lsn",
                "STRING",
                "Silver: S of the open chunked snapshot whose waves are being applied, else NULL",
            ),
            NewColumn(
                "snapshot_wave", "INT", "Silver: last wave of that snapshot applied, else NULL"
            ),
        ),
    ),
    Migration(
        "loss_gap_verdict",
        comments={
            "finalized_until": "The verdict, UTC: every period ending at or before it is "
            "complete; never decreases. Over a loss gap it means nothing more will arrive for "
            "those periods, not that the gap's changes are in the table",
        },
    ),
]
