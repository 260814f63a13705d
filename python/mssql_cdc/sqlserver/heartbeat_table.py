"""A heartbeat: one small captured table, updated on a schedule, so an idle database's CDC
stays current (decision 1379).

SQL Server writes `cdc.lsn_time_mapping` entries and moves `sys.fn_cdc_get_max_lsn()` only when
something commits, so an idle database gives a caught-up stream no newer end offset: its lag
and retention headroom stay those of the last change. Updating a captured row every minute or
so gives every stream of the database a fresh commit time to end at.

The table holds one row (`id` 1) and the time of the newest beat. Its statements keep to what
SQL Server documents and the emulator's TDS front end runs: the beat is a `DECLARE` and an
`UPDATE` of a variable, the checks are `SELECT`s, and CDC is enabled by
`sys.sp_cdc_enable_table`. Only the setup script for SQL Server Agent (`heartbeat_sql`) uses
the `msdb` job procedures, which the emulator does not run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from mssql_cdc.errors import ConfigError, MssqlCdcError
from mssql_cdc.options import SourceConfig, quote_name
from mssql_cdc.sqlserver.tsql.backend import connect
from mssql_cdc.sqlserver.tsql.drivers import Session, error_number
from mssql_cdc.sqlserver.tsql.statements import Statement

__all__ = [
    "DEFAULT_HEARTBEAT_TABLE",
    "HeartbeatResult",
    "HeartbeatTable",
    "heartbeat",
    "heartbeat_sql",
]

DEFAULT_HEARTBEAT_TABLE = "dbo.mssql_cdc_heartbeat"
MAX_INTERVAL_SECONDS = 86_400.0


@dataclass(frozen=True, slots=True)
class HeartbeatTable:
    """The heartbeat table's schema and name, each checked as a SQL Server identifier."""

    schema: str
    name: str

    @classmethod
    def parse(cls, text: str) -> HeartbeatTable:
        """`schema.name` (or `name`, in dbo), without brackets.

        Raises:
            ConfigError: not one or two non-empty parts, or a part SQL Server cannot take.
        """
        parts = text.split(".") if isinstance(text, str) else []
        if len(parts) == 1:
            parts = ["dbo", *parts]
        if len(parts) != 2 or not all(p.strip() for p in parts) or "[" in text:
            raise ConfigError(
                f"heartbeat table {text!r} is not schema.name; pass e.g. {DEFAULT_HEARTBEAT_TABLE} "
                "(no brackets, no database part)"
            )
        schema, name = (p.strip() for p in parts)
        quote_name(schema, "heartbeat table schema")
        quote_name(name, "heartbeat table name")
        return cls(schema, name)

    @property
    def quoted(self) -> str:
        """`[schema].[name]`."""
        return f"{quote_name(self.schema)}.{quote_name(self.name)}"

    @property
    def capture_instance(self) -> str:
        """The capture instance `sys.sp_cdc_enable_table` names by default: `schema_name`."""
        return f"{self.schema}_{self.name}"

    def literal(self, text: str) -> str:
        """`N'text'` with every quote doubled."""
        return "N'" + text.replace("'", "''") + "'"

    @property
    def object_name(self) -> str:
        """`N'[schema].[name]'`, the argument `OBJECT_ID` takes."""
        return self.literal(self.quoted)

    def __str__(self) -> str:
        return f"{self.schema}.{self.name}"


def _create_table(t: HeartbeatTable) -> str:
    return (
        f"CREATE TABLE {t.quoted} (id tinyint NOT NULL PRIMARY KEY, beat_at datetime2(7) NOT NULL)"
    )


def _enable_table(t: HeartbeatTable) -> str:
    return (
        f"EXEC sys.sp_cdc_enable_table @source_schema = {t.literal(t.schema)}, "
        f"@source_name = {t.literal(t.name)}, @role_name = NULL"
    )


def _first_row(t: HeartbeatTable) -> str:
    return (
        "DECLARE @now datetime2(7) = SYSUTCDATETIME(); "
        f"INSERT INTO {t.quoted} (id, beat_at) VALUES (1, @now)"
    )


def _beat(t: HeartbeatTable) -> str:
    return (
        "DECLARE @now datetime2(7) = SYSUTCDATETIME(); "
        f"UPDATE {t.quoted} SET beat_at = @now WHERE id = 1"
    )


def heartbeat_sql(table: str = DEFAULT_HEARTBEAT_TABLE, *, interval_seconds: float = 60.0) -> str:
    """The T-SQL that sets up a heartbeat on SQL Server without this library: the table, its
    row and CDC on it (each step skipped when done), then a SQL Server Agent job that runs the
    beat every `interval_seconds` (whole seconds, at least 10, as Agent schedules allow).

    Raises:
        ConfigError: a bad table name or interval.
    """
    t = HeartbeatTable.parse(table)
    seconds = _interval(interval_seconds, minimum=10.0)
    job = f"mssql-cdc heartbeat {t}"
    beat = _beat(t).replace("; ", ";\n")
    step = beat.replace("'", "''")
    # Agent's subday schedule: every N seconds (type 2), minutes (4) when N divides into them.
    unit, every = (4, int(seconds) // 60) if int(seconds) % 60 == 0 else (2, int(seconds))
    return f"""-- mssql-cdc heartbeat for {t}: run once in the database whose CDC the streams read.
-- 1. The table, its one row and CDC on it; each step is skipped when it is done.
IF OBJECT_ID({t.object_name}, N'U') IS NULL
    {_create_table(t)};
IF NOT EXISTS (SELECT 1 FROM {t.quoted} WHERE id = 1)
    INSERT INTO {t.quoted} (id, beat_at) VALUES (1, SYSUTCDATETIME());
IF NOT EXISTS (SELECT 1 FROM sys.tables WHERE object_id = OBJECT_ID({t.object_name})
               AND is_tracked_by_cdc = 1)
    {_enable_table(t)};

-- 2. The beat: what the Agent job below runs every {int(seconds)} seconds.
{beat};

-- 3. A SQL Server Agent job that runs the beat (skipped when a job of this name exists).
DECLARE @db sysname = DB_NAME();
IF NOT EXISTS (SELECT 1 FROM msdb.dbo.sysjobs WHERE name = {t.literal(job)})
BEGIN
    EXEC msdb.dbo.sp_add_job @job_name = {t.literal(job)};
    EXEC msdb.dbo.sp_add_jobstep @job_name = {t.literal(job)}, @step_name = N'beat',
        @subsystem = N'TSQL', @database_name = @db,
        @command = N'{step}';
    EXEC msdb.dbo.sp_add_schedule @schedule_name = {t.literal(job)}, @freq_type = 4,
        @freq_interval = 1, @freq_subday_type = {unit}, @freq_subday_interval = {every};
    EXEC msdb.dbo.sp_attach_schedule @job_name = {t.literal(job)},
        @schedule_name = {t.literal(job)};
    EXEC msdb.dbo.sp_add_jobserver @job_name = {t.literal(job)};
END;
"""


@dataclass(frozen=True, slots=True)
class HeartbeatResult:
    """What one `heartbeat` call did.

    Attributes:
        table: the heartbeat table, `schema.name`.
        capture_instance: its capture instance.
        prepared: the setup steps it took (`created the table`, `enabled CDC`, `wrote the first
            row`), empty when the table was ready.
        beats: how many beats it committed.
        last_beat_at: the machine's UTC time when the last beat was sent; None without one.
    """

    table: str
    capture_instance: str
    prepared: tuple[str, ...]
    beats: int
    last_beat_at: datetime | None


def heartbeat(
    options: Mapping[str, object],
    *,
    table: str = DEFAULT_HEARTBEAT_TABLE,
    create: bool = False,
    count: int | None = 1,
    interval_seconds: float = 60.0,
    on_beat: Callable[[int, datetime], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> HeartbeatResult:
    """Commit `count` beats (None: until interrupted) to the heartbeat table, `interval_seconds`
    apart, over the T-SQL connection the source `options` name (`backend`,
    `connectionString`, `connectTimeout`; `captureInstance` may be left out).

    With `create`, first makes what is missing: the table, CDC on it, its row. Without it, a
    missing table or one CDC does not capture is refused. `on_beat(n, at)` is called after each.

    Raises:
        ConfigError: bad options, table, count or interval; the emulator backend (serve the file
            with `mssql-cdc emulator serve` and use its connection string); the table is
            missing or not captured and `create` is False.
        ConnectError: the server cannot be reached.
        MssqlCdcError: the server refused a setup statement (the message names it).
    """
    t = HeartbeatTable.parse(table)
    if count is not None and (isinstance(count, bool) or not 1 <= count <= 10**9):
        raise ConfigError(f"heartbeat count {count!r} is out of range; pass 1 or more, or None")
    seconds = _interval(interval_seconds, minimum=0.0)
    # The heartbeat reads no capture instance; a stream's options file names one, others may not.
    config = SourceConfig.from_options({"captureInstance": t.capture_instance, **options})
    if config.backend == "emulator":
        raise ConfigError(
            "the heartbeat needs a T-SQL backend (option backend mssql-python or pymssql with "
            "a connectionString); serve an emulator file with `mssql-cdc emulator serve` and "
            "use its connection string"
        )
    session = connect(config)
    try:
        prepared = _prepare(session, t, create=create)
        beats = 0
        last: datetime | None = None
        while count is None or beats < count:
            if beats:
                sleep(seconds)
            last = datetime.now(UTC).replace(tzinfo=None)
            _send(session, t, _beat(t), "commit a beat to")
            beats += 1
            if on_beat is not None:
                on_beat(beats, last)
    finally:
        session.close()
    return HeartbeatResult(str(t), t.capture_instance, prepared, beats, last)


def _interval(value: float, *, minimum: float) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not minimum <= value <= MAX_INTERVAL_SECONDS
    ):
        raise ConfigError(
            f"heartbeat interval {value!r} is out of range; pass seconds from {minimum:g} to "
            f"{MAX_INTERVAL_SECONDS:g} (a day)"
        )
    return float(value)


def _prepare(session: Session, t: HeartbeatTable, *, create: bool) -> tuple[str, ...]:
    done: list[str] = []
    exists = session.scalar(Statement(f"SELECT OBJECT_ID({t.object_name}, N'U')")) is not None
    if not exists:
        if not create:
            raise ConfigError(_missing(t, "does not exist"))
        _send(session, t, _create_table(t), "create")
        done.append("created the table")
    tracked = session.scalar(
        Statement(
            "SELECT t.is_tracked_by_cdc FROM sys.tables AS t "
            f"WHERE t.object_id = OBJECT_ID({t.object_name})"
        )
    )
    if not tracked:
        if not create:
            raise ConfigError(_missing(t, "is not captured by CDC"))
        _send(session, t, _enable_table(t), "enable CDC on")
        done.append("enabled CDC")
    rows = session.scalar(Statement(f"SELECT COUNT(*) FROM {t.quoted} WHERE id = 1"))
    if not rows:
        _send(session, t, _first_row(t), "write the first row of")
        done.append("wrote the first row")
    return tuple(done)


def _missing(t: HeartbeatTable, what: str) -> str:
    return (
        f"heartbeat table {t} {what}; pass --create (create=True) to set it up, or run the "
        "setup statements of `mssql-cdc heartbeat --print-sql`"
    )


def _send(session: Session, t: HeartbeatTable, sql: str, doing: str) -> None:
    try:
        session.run(Statement(sql))
    except Exception as exc:  # the driver's own error class; its number and text are kept
        number = error_number(exc)
        reason = " ".join(str(exc).split())[:300]
        raise MssqlCdcError(
            f"the server refused to {doing} heartbeat table {t} (error {number}: {reason}) "
            f"running: {sql}; run the statements of `mssql-cdc heartbeat --print-sql` as a user "
            "who may create tables and enable CDC (db_owner), or check the table's shape"
        ) from exc
