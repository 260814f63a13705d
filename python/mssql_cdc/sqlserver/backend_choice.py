"""Backend choice: `SourceConfig.backend` to the implementation of each caller-named Protocol.

One function, `open_backend`, so no caller tests the backend name itself. The views of one
`Backend` share one connection (T-SQL) or one emulator file, and close together.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mssql_cdc.options import SourceConfig
from mssql_cdc.sqlserver.protocols import (
    CaptureCatalog,
    ChangeRangeReader,
    ChunkPlanner,
    SnapshotReader,
    StreamPlanner,
    TileHasher,
)

__all__ = ["Backend", "open_backend"]


@dataclass(frozen=True, slots=True)
class Backend:
    """The Protocol views of one connection (or emulator handle)."""

    planner: StreamPlanner
    catalog: CaptureCatalog
    changes: ChangeRangeReader
    snapshots: SnapshotReader
    chunks: ChunkPlanner
    tiles: TileHasher
    close: Callable[[], None]


def open_backend(config: SourceConfig) -> Backend:
    """Open the configured backend: `emulator` reads `emulatorPath` in process; `mssql-python`
    and `pymssql` open one session to SQL Server.

    Raises:
        ImportError: the driver package is not installed (the message names it).
        ConfigError: the connection settings are unusable.
    """
    if config.backend == "emulator":
        from mssql_cdc.sqlserver.emulated.backend import EmulatorBackend
        from mssql_cdc.sqlserver.emulated.snapshot import EmulatorSnapshotReader
        from mssql_cdc.sqlserver.emulated.tiles import EmulatorTileHasher

        if config.emulator_path is None:  # SourceConfig refuses this; kept for the type checker
            raise ValueError("option emulatorPath is required with backend 'emulator'")
        emulator = EmulatorBackend(config.emulator_path)
        table = EmulatorSnapshotReader(
            config.emulator_path,
            isolation=config.isolation_level,
            lock_timeout_ms=config.lock_timeout_ms,
        )

        def close_emulator() -> None:
            emulator.close()
            table.close()

        return Backend(
            emulator, emulator, emulator, table, table, EmulatorTileHasher(table), close_emulator
        )
    from mssql_cdc.sqlserver.tsql.backend import (
        TsqlCaptureCatalog,
        TsqlChangeReader,
        TsqlStreamPlanner,
        connect,
    )
    from mssql_cdc.sqlserver.tsql.snapshot_backend import TsqlSnapshotReader
    from mssql_cdc.sqlserver.tsql.tiles import TsqlTileHasher

    session = connect(config)
    snapshots = TsqlSnapshotReader(
        session, isolation=config.isolation_level, lock_timeout_ms=config.lock_timeout_ms
    )
    return Backend(
        TsqlStreamPlanner(session),
        TsqlCaptureCatalog(session),
        TsqlChangeReader(session),
        snapshots,
        snapshots,
        TsqlTileHasher(session, snapshots),
        session.close,
    )
