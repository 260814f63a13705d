"""What reads cost the emulator, per table, in the spirit of SQL Server's `SET STATISTICS IO`
(decision 1411).

Every read of an emulator file made in this process adds to the file's tally: a read that starts
at a key bound is a seek, one that starts at the table's first row a scan, and `rows_read` counts
the stored rows it stepped over (the emulator has no pages: one row read is one read). Reads in
process and reads served over TDS by a server in this process both count. Over TDS, `SET
STATISTICS IO ON` also sends each SELECT's own counts as message 3615.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import mssql_cdc._native as _native

__all__ = ["TableIo", "io_statistics", "reset_io_statistics"]


@dataclass(frozen=True)
class TableIo:
    """The reads of one table: how many started at a key bound or at the first row, and the
    stored rows they stepped over."""

    scans: int
    seeks: int
    rows_read: int


def io_statistics(path: str | os.PathLike[str]) -> dict[str, TableIo]:
    """The reads of the emulator file at `path` this process made since the last reset, by
    table name as the emulator names it (`dbo.orders`, `cdc.dbo_orders_CT`)."""
    found: dict[str, dict[str, int]] = _native.emu.io_statistics(os.fspath(path))
    return {table: TableIo(**counts) for table, counts in found.items()}


def reset_io_statistics(path: str | os.PathLike[str]) -> None:
    """Forget the reads of the emulator file at `path` counted so far."""
    _native.emu.reset_io_statistics(os.fspath(path))
