"""The types users annotate their own code with, in one public module (decision 1372).

Everything here but `SourceOptions` is the library's own type, re-exported from where it is
defined, so an annotation and the library can never disagree:

- `Lsn`: an LSN (core's type: canonical text, compared in LSN order).
- `IsolationLevel`, `Backend`, `SchemaChangePolicy`, `DurationGuard`, `StreamSnapshotMode`: the
  `Literal`s of the options isolationLevel, backend, schemaChangePolicy,
  snapshotDurationGuard and snapshotMode.
- `SilverGranularity`: the `Literal` of `apply_changes(..., granularity=...)`.
- `SourceOptions`: the source options as a `TypedDict` (every key optional), for the `options`
  dict of `stream()`, `fan_out()` and `reconcile()`.
- The SQL Server seam's Protocols (`StreamPlanner`, `CaptureCatalog`, `ChangeRangeReader`,
  `SnapshotReader`, `ChunkPlanner`, `TileHasher`): what a backend implements.
- The facts table's `detail` payloads (docs/tables.md, '`detail` payloads').
"""

from __future__ import annotations

from typing import TypedDict

from mssql_cdc.core import lsn
from mssql_cdc.facts import (
    BatchDetail,
    CaptureInstanceSwitchedDetail,
    DataSkippedDetail,
    IntExtent,
    KeysetExtent,
    RepairDetail,
    RequestedDetail,
    SchemaChangeDetail,
    SeededDetail,
    SnapshotChunkDetail,
    SnapshotCompletionDetail,
    SnapshotOpenDetail,
    SnapshotPlanDetail,
)
from mssql_cdc.options import (
    Backend,
    DurationGuard,
    IsolationLevel,
    SchemaChangePolicy,
    StreamSnapshotMode,
)
from mssql_cdc.silver import SilverGranularity
from mssql_cdc.sqlserver import (
    CaptureCatalog,
    ChangeRangeReader,
    ChunkPlanner,
    SnapshotReader,
    StreamPlanner,
    TileHasher,
)

__all__ = [
    "Backend",
    "BatchDetail",
    "CaptureCatalog",
    "CaptureInstanceSwitchedDetail",
    "ChangeRangeReader",
    "ChunkPlanner",
    "DataSkippedDetail",
    "DurationGuard",
    "IntExtent",
    "IsolationLevel",
    "KeysetExtent",
    "Lsn",
    "RepairDetail",
    "RequestedDetail",
    "SchemaChangeDetail",
    "SchemaChangePolicy",
    "SeededDetail",
    "SilverGranularity",
    "SnapshotChunkDetail",
    "SnapshotCompletionDetail",
    "SnapshotOpenDetail",
    "SnapshotPlanDetail",
    "SnapshotReader",
    "SourceOptions",
    "StreamPlanner",
    "StreamSnapshotMode",
    "TileHasher",
]

Lsn = lsn.Lsn
"""An LSN: `Lsn("0x0000002A000001F00003")`; canonical text, ordered as SQL Server orders LSNs."""


class SourceOptions(TypedDict, total=False):
    """The source options as Python callers pass them (docs/source-options.md).

    Spark hands every option as text; `stream()`, `fan_out()` and `reconcile()` also take an
    `int` for a number and a `bool` for a flag, and turn them into the same text. So a number
    is `int | str`, a flag `bool | str`, a mode its `Literal`, and the rest text: an LSN as
    `0x...` text, `columns` as `name TYPE, ...`, `snapshotChunks` and `snapshotKeys` as JSON.
    """

    captureInstance: str
    connectionString: str
    backend: Backend
    emulatorPath: str
    connectTimeout: int | str
    startingLsn: str  # "earliest", "latest" or an LSN
    maxCommitsPerBatch: int | str
    numPartitions: int | str  # a count or "auto"
    failOnDataLoss: bool | str
    metricsPath: str
    includeCommandId: bool | str
    arrowBatchSize: int | str
    columns: str
    sourceTimeZone: str  # "auto", "UTC" or a zone name
    schemaChangePolicy: SchemaChangePolicy
    snapshotLsn: str
    snapshotChunks: str
    snapshotKeys: str
    isolationLevel: IsolationLevel
    lockTimeoutMs: int | str
    snapshotDurationGuard: DurationGuard
    snapshotOnSwitch: bool | str
    snapshotMode: StreamSnapshotMode
    gapDeletesFrom: str
    user: str
    password: str
    accessToken: str
    accessTokenProvider: str  # "package.module:function"
