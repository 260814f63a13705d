"""Silver migrations. Base shape (version 0): captured columns, `_start_lsn`, `_commit_ts`."""

from __future__ import annotations

from mssql_cdc.tables.migrations import Migration

__all__ = ["MIGRATIONS"]

MIGRATIONS: list[Migration] = []
