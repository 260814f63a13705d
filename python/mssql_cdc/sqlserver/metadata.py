"""Capture-instance metadata as values: what every backend returns at the SQL Server seam."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from mssql_cdc.core import lsn

__all__ = [
    "CaptureInstance",
    "CapturedColumn",
    "ChangeTableAccess",
    "DdlEntry",
    "ReadColumn",
    "SessionStats",
    "TableColumn",
]


@dataclass(frozen=True, slots=True)
class CaptureInstance:
    """One row of `sys.sp_cdc_help_change_data_capture`."""

    name: str
    source_schema: str
    source_table: str
    start_lsn: lsn.Lsn | None  # None until capture establishes the instance
    create_date: datetime | None  # server-local, as the procedure returns it
    index_columns: tuple[str, ...]  # the instance's unique index, in key order
    captured_columns: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CapturedColumn:
    """A column a capture instance captures, with its current type and computed flag."""

    name: str
    ordinal: int  # position in the change table
    column_id: int | None  # sys.columns id in the source table; None once dropped there
    sql_type: str  # base type name, lower case, e.g. "decimal"
    type_text: str  # full type as the server reports it, e.g. "decimal(12,2)"
    is_computed: bool


@dataclass(frozen=True, slots=True)
class DdlEntry:
    """One row of `sys.sp_cdc_get_ddl_history`: a DDL statement on the source table."""

    ddl_lsn: lsn.Lsn
    ddl_time: datetime | None
    ddl_command: str
    required_column_update: bool


@dataclass(frozen=True, slots=True)
class ChangeTableAccess:
    """Whether the login may read an instance's change table, and whether it has a command id."""

    can_select: bool
    has_command_id: bool


@dataclass(frozen=True, slots=True)
class ReadColumn:
    """A captured column to read: its name, declared Spark type and, when known, SQL type."""

    name: str
    spark_type: str  # canonical, as in SourceConfig.columns ("INT", "DECIMAL(12,2)", ...)
    sql_type: str | None = None  # base type name; None lets the backend pick by Spark type
    type_text: str | None = None  # full type as the server reports it ("datetime2(7)"), if known


@dataclass(frozen=True, slots=True)
class SessionStats:
    """What a task measures of its own connection (docs/sqlserver.md, 'What the reader runs')."""

    rtt_ms: float
    network_wait_ms: float | None  # None where sys.dm_exec_session_wait_stats is not permitted


@dataclass(frozen=True, slots=True)
class TableColumn:
    """A column of a source table (snapshot reads and key planning)."""

    name: str
    column_id: int
    sql_type: str  # base type name, lower case
    is_computed: bool
    collation: str | None
    max_length: int = 0  # bytes, as sys.columns says; -1 for (max)
    precision: int = 0
    scale: int = 0
