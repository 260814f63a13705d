"""The SQL Server CDC emulator: one SQL Server database with Change Data Capture in one SQLite
file, the embedded default source and the test double (docs/emulator.md).
"""

from mssql_cdc.emulator._convert import Time
from mssql_cdc.emulator._engine import Change, Emulator, Row, Transaction
from mssql_cdc.emulator._reader import EmulatorReader
from mssql_cdc.emulator.serve import TdsServer
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
    "HookError",
    "InvalidRangeError",
    "PermissionDeniedError",
    "Row",
    "SchemaError",
    "TdsServer",
    "Time",
    "Transaction",
    "UnknownObjectError",
]
