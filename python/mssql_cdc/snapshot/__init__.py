"""Snapshots: full and chunked, their plans, targets, the open race, the Spark read, the
source probe, and `backfill()` with its waves."""

from __future__ import annotations

from mssql_cdc.snapshot.backfill import BackfillStatus, backfill
from mssql_cdc.snapshot.bootstrap import checked_family, generation_start
from mssql_cdc.snapshot.chunk_plan import usable_keys
from mssql_cdc.snapshot.chunked_open import open_chunked
from mssql_cdc.snapshot.full import (
    SnapshotResult,
    newest_known_snapshot,
    newest_whole_snapshot,
    take_full,
    write_completion,
)
from mssql_cdc.snapshot.gap_deletes import write_gap_deletes
from mssql_cdc.snapshot.probe import open_probe
from mssql_cdc.snapshot.retyped import bronze_retypes
from mssql_cdc.snapshot.seed import seed
from mssql_cdc.snapshot.slots import limited

__all__ = [
    "BackfillStatus",
    "SnapshotResult",
    "backfill",
    "bronze_retypes",
    "checked_family",
    "generation_start",
    "limited",
    "newest_known_snapshot",
    "newest_whole_snapshot",
    "open_chunked",
    "open_probe",
    "seed",
    "take_full",
    "usable_keys",
    "write_completion",
    "write_gap_deletes",
]
