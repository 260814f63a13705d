"""The SQL Server seam: caller-named Protocols, metadata values and the T-SQL backends.

The emulator backend (`emulator_backend`, `emulator_snapshot`) is imported by `open_backend`
when chosen. Importing this package imports no driver; `mssql-python` or `pymssql` is imported
when the first connection opens.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mssql_cdc.core import lazy_names
from mssql_cdc.sqlserver.backend_choice import Backend, open_backend
from mssql_cdc.sqlserver.heartbeat_table import (
    DEFAULT_HEARTBEAT_TABLE,
    HeartbeatResult,
    HeartbeatTable,
    heartbeat,
    heartbeat_sql,
)
from mssql_cdc.sqlserver.instances import (
    find_instance,
    instances_named,
    pieces,
    resolve_instance,
    serving_instance,
    table_instances,
)
from mssql_cdc.sqlserver.isolation import source_read_errors
from mssql_cdc.sqlserver.key_bounds import integer_bounds, key_bounds
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
    TileHasher,
)
from mssql_cdc.sqlserver.tsql.backend import (
    TsqlCaptureCatalog,
    TsqlChangeReader,
    TsqlStreamPlanner,
    connect,
    permission_error,
)
from mssql_cdc.sqlserver.tsql.drivers import error_number
from mssql_cdc.sqlserver.tsql.retry import Reconnecting, call_with_retries, is_transient
from mssql_cdc.sqlserver.tsql.snapshot_backend import TsqlSnapshotReader

# The emulator backend loads pyarrow and the native engine, so it is imported on first use:
# a T-SQL backend's driver process and executors never load it.
__getattr__ = lazy_names(__name__, {"EmulatorBackend": "mssql_cdc.sqlserver.emulated.backend"})

if TYPE_CHECKING:
    from mssql_cdc.sqlserver.emulated.backend import EmulatorBackend


__all__ = [
    "DEFAULT_HEARTBEAT_TABLE",
    "Backend",
    "CaptureCatalog",
    "CaptureInstance",
    "CapturedColumn",
    "ChangeRangeReader",
    "ChangeTableAccess",
    "ChunkPlanner",
    "DdlEntry",
    "EmulatorBackend",
    "HeartbeatResult",
    "HeartbeatTable",
    "ReadColumn",
    "Reconnecting",
    "SessionStats",
    "SnapshotReader",
    "StreamPlanner",
    "TableColumn",
    "TileHasher",
    "TsqlCaptureCatalog",
    "TsqlChangeReader",
    "TsqlSnapshotReader",
    "TsqlStreamPlanner",
    "call_with_retries",
    "connect",
    "error_number",
    "find_instance",
    "heartbeat",
    "heartbeat_sql",
    "instances_named",
    "integer_bounds",
    "is_transient",
    "key_bounds",
    "open_backend",
    "permission_error",
    "pieces",
    "resolve_instance",
    "serving_instance",
    "source_read_errors",
    "table_instances",
]
