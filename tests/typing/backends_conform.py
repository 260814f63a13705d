"""Checked by mypy --strict (tests/unit/sqlserver/test_backend_typing.py): each backend is
its Protocol."""

from __future__ import annotations

from mssql_cdc.core.ranges import TileSource
from mssql_cdc.sqlserver import (
    CaptureCatalog,
    ChangeRangeReader,
    ChunkPlanner,
    SnapshotReader,
    StreamPlanner,
    TsqlCaptureCatalog,
    TsqlChangeReader,
    TsqlSnapshotReader,
    TsqlStreamPlanner,
)
from mssql_cdc.sqlserver.tsql.drivers import Session


def conform(session: Session) -> None:
    planner: StreamPlanner = TsqlStreamPlanner(session)
    tiles: TileSource = TsqlStreamPlanner(session)
    catalog: CaptureCatalog = TsqlCaptureCatalog(session)
    reader: ChangeRangeReader = TsqlChangeReader(session)
    snapshots: SnapshotReader = TsqlSnapshotReader(
        session, isolation="readCommitted", lock_timeout_ms=None
    )
    chunks: ChunkPlanner = TsqlSnapshotReader(session, isolation="snapshot", lock_timeout_ms=5)
    del planner, tiles, catalog, reader, snapshots, chunks


def conform_emulator(path: str) -> None:
    from mssql_cdc.sqlserver.emulated.backend import EmulatorBackend
    from mssql_cdc.sqlserver.emulated.snapshot import EmulatorSnapshotReader

    planner: StreamPlanner = EmulatorBackend(path)
    tiles: TileSource = EmulatorBackend(path)
    catalog: CaptureCatalog = EmulatorBackend(path)
    reader: ChangeRangeReader = EmulatorBackend(path)
    snapshots: SnapshotReader = EmulatorSnapshotReader(path)
    chunks: ChunkPlanner = EmulatorSnapshotReader(path)
    del planner, tiles, catalog, reader, snapshots, chunks
