"""The T-SQL backends for a real SQL Server: one class per caller-named Protocol.

Each object owns one session (one connection) and closes it in `close()`. None of them is
pickled: executors build their own reader from the options. Run over TDS against the
emulator's front end, not yet against a live server (docs/sqlserver.md).

Commit times in a repeated local hour take the instant LSN order gives them (decision 1320).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from mssql_cdc.core import Tile, lsn
from mssql_cdc.errors import ConfigError, quoted
from mssql_cdc.options import SourceConfig
from mssql_cdc.sqlserver.instances import instances_named
from mssql_cdc.sqlserver.metadata import (
    CapturedColumn,
    CaptureInstance,
    ChangeTableAccess,
    DdlEntry,
    ReadColumn,
    SessionStats,
)
from mssql_cdc.sqlserver.tsql import queries
from mssql_cdc.sqlserver.tsql import statements as tsql
from mssql_cdc.sqlserver.tsql.arrow import (
    change_shape,
    fetch_batches,
    repeats,
    with_candidates,
)
from mssql_cdc.sqlserver.tsql.drivers import Driver, Session, error_number, open_session

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "TsqlCaptureCatalog",
    "TsqlChangeReader",
    "TsqlStreamPlanner",
    "connect",
    "permission_error",
]

_PERMISSION_DENIED = 229
_NO_SERVER_STATE = frozenset({297, 300})


def connect(config: SourceConfig) -> Session:
    """Open a new session with the configured driver and login timeout.

    Raises:
        ConfigError: the backend is not a T-SQL one, or there is no connection string.
        ImportError: the driver package is not installed (the message names it).
    """
    if config.backend == "emulator" or config.connection_string is None:
        raise ConfigError(
            f"backend {config.backend!r} does not talk T-SQL; use backend mssql-python or "
            "pymssql with a connectionString"
        )
    driver: Driver = config.backend
    return open_session(
        driver,
        config.connection_string,
        connect_timeout=config.connect_timeout,
        credentials=config.credentials,
    )


class TsqlStreamPlanner:
    """StreamPlanner over T-SQL: the driver's polls, AvailableNow end and range tiles."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def max_lsn(self) -> lsn.Lsn | None:
        return queries.max_lsn(self._session)

    def min_lsn(self, capture_instance: str) -> lsn.Lsn | None:
        return queries.min_lsn(self._session, capture_instance)

    def commit_time(self, at: lsn.Lsn, time_zone: str) -> datetime | None:
        return queries.commit_time(self._session, at, time_zone)

    def nth_commit_after(self, after: lsn.Lsn, n: int) -> lsn.Lsn | None:
        return queries.nth_commit_after(self._session, after, n)

    def split_points(
        self, capture_instance: str, from_lsn: lsn.Lsn, to_lsn: lsn.Lsn, n: int
    ) -> Sequence[Tile]:
        return queries.split_points(self._session, capture_instance, from_lsn, to_lsn, n)

    def close(self) -> None:
        self._session.close()


# Errors that mean this login cannot see cdc.change_tables or an object's metadata: 229
# (permission denied), 208 (invalid object name), 916 (no access to the database).
_NOT_VISIBLE = frozenset({208, 229, 916})


class TsqlCaptureCatalog:
    """CaptureCatalog over T-SQL: instances, captured columns, DDL history, access, zone."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def capture_instances(
        self, source_schema: str | None = None, source_table: str | None = None
    ) -> Sequence[CaptureInstance]:
        return queries.capture_instances(self._session, source_schema, source_table)

    def instance_table(self, capture_instance: str) -> tuple[str, str] | None:
        """The instance's table from `cdc.change_tables`; None when no instance has the name
        or this login may not read the view or the table's metadata (then list instances)."""
        try:
            rows = self._session.rows(tsql.instance_table(capture_instance))
        except Exception as exc:
            if error_number(exc) not in _NOT_VISIBLE:
                raise
            return None
        if len(rows) != 1:
            return None
        schema, table = rows[0].get("source_schema"), rows[0].get("source_table")
        return (str(schema), str(table)) if schema is not None and table is not None else None

    def captured_columns(self, capture_instance: str) -> Sequence[CapturedColumn]:
        for instance in instances_named(self, capture_instance):
            if instance.name == capture_instance:
                return queries.captured_columns(self._session, instance)
        raise ConfigError(
            f"capture instance {quoted(capture_instance)} does not exist or this login cannot read "
            "it (sys.sp_cdc_help_change_data_capture does not list it)"
        )

    def ddl_history(
        self, capture_instance: str, after: lsn.Lsn, upto: lsn.Lsn
    ) -> Sequence[DdlEntry]:
        return queries.ddl_history(self._session, capture_instance, after, upto)

    def change_table_access(self, capture_instance: str) -> ChangeTableAccess:
        return queries.change_table_access(self._session, capture_instance)

    def resolve_time_zone(self, setting: str) -> str:
        return queries.resolve_time_zone(self._session, setting)

    def close(self) -> None:
        self._session.close()


class TsqlChangeReader:
    """ChangeRangeReader over T-SQL: one task's range, its guard reads and its metrics."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def read_changes(
        self,
        capture_instance: str,
        from_lsn: lsn.Lsn,
        to_lsn: lsn.Lsn,
        *,
        columns: Sequence[ReadColumn],
        include_command_id: bool,
        time_zone: str,
        batch_rows: int,
        null_columns: Sequence[str] = (),
    ) -> Iterator[pa.RecordBatch]:
        """Yield the range's change rows in the output schema and order (docs/source.md, 'Rows').

        Declared columns named in `null_columns` are not read and come back NULL.

        Raises:
            PermissionError: the login may not SELECT the change table (error 229).
        """
        shape = change_shape(
            capture_instance,
            columns,
            include_command_id=include_command_id,
            null_columns=null_columns,
        )
        statement = tsql.change_rows(
            capture_instance,
            from_lsn,
            to_lsn,
            shape.read,
            include_command_id=include_command_id,
            time_zone=time_zone,
        )
        try:
            cursor = self._session.execute(statement)
        except Exception as exc:  # re-raised, error 229 as a PermissionError saying what to do
            if error_number(exc) == _PERMISSION_DENIED:
                raise permission_error(capture_instance) from exc
            raise
        read_schema = with_candidates(shape.schema, time_zone)
        held: list[pa.RecordBatch] = []  # from the first repeated local time on
        try:
            for batch in fetch_batches(
                cursor,
                arrow=self._session.arrow,
                schema=read_schema,
                constants=shape.constants,
                batch_rows=batch_rows,
            ):
                if held or repeats(batch):
                    held.append(batch)  # the session is busy until the result ends
                else:
                    yield batch.select(shape.schema.names)
        finally:
            cursor.close()
        if held:
            yield from self._in_lsn_order(held, shape.schema, time_zone)

    def _in_lsn_order(
        self, held: list[pa.RecordBatch], schema: pa.Schema, time_zone: str
    ) -> Iterator[pa.RecordBatch]:
        """`held` with each commit time the instant LSN order gives it."""
        import pyarrow as pa

        first = lsn.Lsn(str(held[0].column("_start_lsn")[0].as_py()))
        last = lsn.Lsn(str(held[-1].column("_start_lsn")[-1].as_py()))
        known = queries.mapping_span(self._session, first, last, time_zone)
        for batch in held:
            starts = batch.column("_start_lsn").to_pylist()
            earliest = batch.column("_commit_ts").to_pylist()
            utc = [
                known.get(lsn.normalize(str(s)), e) if s is not None else e
                for s, e in zip(starts, earliest, strict=True)
            ]
            position = batch.schema.get_field_index("_commit_ts")
            batch = batch.set_column(
                position, batch.schema.field(position), pa.array(utc, pa.timestamp("us"))
            )
            yield batch.select(schema.names)

    def min_lsn(self, capture_instance: str) -> lsn.Lsn | None:
        return queries.min_lsn(self._session, capture_instance)

    def max_lsn(self) -> lsn.Lsn | None:
        return queries.max_lsn(self._session)

    def commit_time(self, at: lsn.Lsn, time_zone: str) -> datetime | None:
        return queries.commit_time(self._session, at, time_zone)

    def session_stats(self) -> SessionStats:
        started = time.perf_counter()
        self._session.scalar(tsql.ping())
        rtt_ms = (time.perf_counter() - started) * 1000.0
        try:
            wait = self._session.scalar(tsql.network_wait())
        except Exception as exc:  # re-raised unless only VIEW SERVER STATE is missing
            if error_number(exc) not in _NO_SERVER_STATE:
                raise
            return SessionStats(rtt_ms, None)
        return SessionStats(rtt_ms, float(wait or 0))

    def close(self) -> None:
        self._session.close()


def permission_error(capture_instance: str, user: str = "<user>") -> PermissionError:
    """The error for a login without SELECT on an instance's change table.

    A login outside the instance's gating role cannot see the role's name (SQL Server hides
    the instance from it), so the message says where a db_owner finds it.
    """
    table = f"cdc.[{capture_instance.replace(']', ']]')}_CT]"
    grantee = "[" + user.replace("]", "]]") + "]"
    return PermissionError(
        f"this login may not read the change table {table} of capture instance "
        f"'{capture_instance}'; run GRANT SELECT ON {table} TO {grantee}, or, when the "
        "instance has a gating role (the role_name column of "
        "sys.sp_cdc_help_change_data_capture, run as db_owner), ALTER ROLE [<role_name>] "
        f"ADD MEMBER {grantee}; then restart the query"
    )
