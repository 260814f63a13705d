"""The SQL Server seam: caller-named Protocols, metadata values and the T-SQL backends.

The emulator backend (`emulator_backend`, `emulator_snapshot`) is imported by `open_backend`
when chosen. Importing this package imports no driver; `mssql-python` or `pymssql` is imported
when the first connection opens.
"""

from mssql_cdc.sqlserver.backend_choice import Backend, open_backend
from mssql_cdc.sqlserver.metadata import (
    CapturedColumn,
    CaptureInstance,
    ChangeTableAccess,
    DdlEntry,
    ReadColumn,
    SessionStats,
    TableColumn,
)
from mssql_cdc.sqlserver.protocols import (
    CaptureCatalog,
    ChangeRangeReader,
    ChunkPlanner,
    SnapshotReader,
    StreamPlanner,
)
from mssql_cdc.sqlserver.tsql.backend import (
    TsqlCaptureCatalog,
    TsqlChangeReader,
    TsqlStreamPlanner,
    connect,
)
from mssql_cdc.sqlserver.tsql.snapshot_backend import TsqlSnapshotReader

__all__ = [
    "Backend",
    "CaptureCatalog",
    "CaptureInstance",
    "CapturedColumn",
    "ChangeRangeReader",
    "ChangeTableAccess",
    "ChunkPlanner",
    "DdlEntry",
    "ReadColumn",
    "SessionStats",
    "SnapshotReader",
    "StreamPlanner",
    "TableColumn",
    "TsqlCaptureCatalog",
    "TsqlChangeReader",
    "TsqlSnapshotReader",
    "TsqlStreamPlanner",
    "connect",
    "open_backend",
]
