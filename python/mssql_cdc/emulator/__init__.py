"""The SQL Server CDC emulator: one SQL Server database with Change Data Capture in one SQLite
file, the embedded default source and the test double (docs/emulator.md).
"""

from __future__ import annotations

from mssql_cdc.emulator._convert import Time, from_micros, to_micros
from mssql_cdc.emulator._engine import Change, Emulator, Row, Transaction
from mssql_cdc.emulator._reader import EmulatorReader
from mssql_cdc.emulator.io_stats import TableIo, io_statistics, reset_io_statistics
from mssql_cdc.emulator.jobs import JobClock
from mssql_cdc.emulator.profiles import PROFILES, Profile, profile_settings
from mssql_cdc.emulator.row_digests import batch_row_digests, batch_tile_digest
from mssql_cdc.emulator.serve import TdsServer, serve
from mssql_cdc.emulator.statistics import HistogramStep, KeyStatistics, statistics_io_name
from mssql_cdc.errors import (
    ArgumentError,
    BusyError,
    CaptureError,
    CaptureInstanceLimitError,
    ClockError,
    ConstraintError,
    EmulatorError,
    FileFormatError,
    FormatVersionError,
    HookError,
    InvalidRangeError,
    PermissionDeniedError,
    SchemaError,
    UnknownObjectError,
)

__all__ = [
    "PROFILES",
    "ArgumentError",
    "BusyError",
    "CaptureError",
    "CaptureInstanceLimitError",
    "Change",
    "ClockError",
    "ConstraintError",
    "Emulator",
    "EmulatorError",
    "EmulatorReader",
    "FileFormatError",
    "FormatVersionError",
    "HistogramStep",
    "HookError",
    "InvalidRangeError",
    "JobClock",
    "KeyStatistics",
    "PermissionDeniedError",
    "Profile",
    "Row",
    "SchemaError",
    "TableIo",
    "TdsServer",
    "Time",
    "Transaction",
    "UnknownObjectError",
    "batch_row_digests",
    "batch_tile_digest",
    "from_micros",
    "io_statistics",
    "profile_settings",
    "reset_io_statistics",
    "serve",
    "statistics_io_name",
    "to_micros",
]
