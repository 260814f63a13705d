"""Emulator and Transaction: the write side of the SQL Server CDC emulator (docs/emulator.md).

One object serves one thread; many objects and processes share a file. Every method is one or
more short write transactions of the file, so a crash leaves whole commits only.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import mssql_cdc._native as _native
from mssql_cdc.core import EndsWithBlock
from mssql_cdc.emulator._convert import (
    SETTING_NAMES,
    Time,
    from_micros,
    lsn_arg,
    opt_micros,
    record_batch_reader,
    setting_text,
    setting_value,
    to_micros,
    to_pylist,
    zero_lsn,
)
from mssql_cdc.emulator._permissions import Permissions
from mssql_cdc.emulator._reader import EmulatorReader
from mssql_cdc.emulator.profiles import Profile, profile_settings
from mssql_cdc.emulator.serve import DEFAULT_MAX_CONNECTIONS, TdsServer, serve
from mssql_cdc.emulator.statistics import KeyStatistics
from mssql_cdc.errors import UnknownObjectError

Row = Mapping[str, object]
"""A row: column names to Python values (int, str, Decimal, datetime, bytes, None...)."""
Change = tuple[str, str, Row] | tuple[str, str, Row, Row]
"""One change for `commit`: (kind, table, row), kind "insert", "update" (row holds the key and
the columns it sets) or "delete" (row holds the key); (kind, table, row, old_key) updates a key."""
ReadKind = Literal["changes", "table"]


def _changes(changes: Sequence[Change]) -> list[Change]:
    if isinstance(changes, str | bytes) or not isinstance(changes, Sequence):
        raise TypeError("changes must be a list of (kind, table, row[, old_key]) tuples")
    return changes if isinstance(changes, list) else list(changes)


class Emulator(Permissions, EndsWithBlock):
    """One SQL Server database with Change Data Capture, kept in one SQLite file (`path`), made
    by `Emulator.create` or `Emulator.open` and closed by `close()` or a `with` block."""

    def __init__(self, engine: Any, path: Path) -> None:
        """Use Emulator.create or Emulator.open."""
        self._engine: Any = engine
        self._path = path
        self._reader = EmulatorReader(path)

    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        *,
        start: Time = "2026-09-28T13:50:00",
        retention_minutes: int = 4320,
        capture: Literal["immediate", "manual"] | None = None,
        shuffle_unordered: bool = False,
        profile: Profile = "immediate",
    ) -> Emulator:
        """A new emulator file, returned open. `start` is the clock's floor; `shuffle_unordered`
        turns the order check on; `profile="realistic"` runs a real server's capture and cleanup
        jobs on the emulator's clock (docs/emulator.md, 'Profiles')."""
        if isinstance(retention_minutes, bool) or not isinstance(retention_minutes, int):
            raise TypeError("retention_minutes must be an int")
        mode, jobs = profile_settings(profile, capture)
        p = Path(path)
        _native.emu.Engine.create(str(p), to_micros(start), retention_minutes, mode)
        emu = cls(_native.emu.Engine(str(p)), p)
        emu.configure(**jobs, **({"shuffle_unordered": True} if shuffle_unordered else {}))
        return emu

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> Emulator:
        """An existing emulator file."""
        p = Path(path)
        return cls(_native.emu.Engine(str(p)), p)

    @property
    def path(self) -> Path:
        return self._path

    def close(self) -> None:
        """Rolls back this object's open Transactions; later calls, reads too, raise ValueError.

        Readers returned by `reader()` are independent and stay open.
        """
        if self._engine is not None:
            self._engine.rollback_all()
        self._engine = None
        self._reader.close()

    def _end(self) -> None:  # the end of a `with` block
        self.close()

    def __repr__(self) -> str:
        return f"Emulator({str(self._path)!r})"

    @property
    def _open_engine(self) -> Any:
        if self._engine is None:
            raise ValueError(f"the Emulator for {self._path} is closed; open it again")
        return self._engine

    @property
    def _open_reader(self) -> EmulatorReader:
        """This object's own reader, refused like every other call once it is closed."""
        if self._engine is None:
            raise ValueError(f"the Emulator for {self._path} is closed; open it again")
        return self._reader

    def configure(self, **settings: object) -> None:
        """Stores settings (docs/emulator.md, 'Settings'); unknown names, bad values: ValueError."""
        for name, value in settings.items():
            self._open_engine.configure(name, setting_text(name, value))

    def settings(self) -> dict[str, object]:
        return {n: setting_value(n, self._open_engine.setting(n)) for n in SETTING_NAMES}

    def create_table(
        self,
        table: str,
        columns: Mapping[str, str],
        *,
        primary_key: str | Sequence[str] | None = None,
    ) -> None:
        """A source table; `columns` maps names to type strings, in order (docs/emulator.md)."""
        if not isinstance(columns, Mapping):
            raise TypeError("columns must be a mapping of column names to SQL Server types")
        key = [primary_key] if isinstance(primary_key, str) else list(primary_key or [])
        self._open_engine.create_table(table, list(columns.items()), key)

    def enable_cdc(
        self,
        table: str,
        *,
        capture_instance: str | None = None,
        captured_columns: Sequence[str] | None = None,
        role_name: str | None = None,
    ) -> str:
        """Creates a capture instance (default `<schema>_<table>`) and returns its name;
        `role_name` gates its change data (created when it does not exist, as SQL Server does)."""
        cols = None if captured_columns is None else list(captured_columns)
        result: str = self._open_engine.enable_cdc(table, capture_instance, cols, role_name)
        return result

    def disable_cdc(self, capture_instance: str) -> None:
        """Drops the instance once no change read holds it; BusyError 1222 past lock_timeout_ms."""
        self._open_engine.disable_cdc(capture_instance)

    def add_column(self, table: str, column: str, sql_type: str, *, at: Time | None = None) -> str:
        result: str = self._open_engine.add_column(table, column, sql_type, opt_micros(at))
        return result

    def drop_column(self, table: str, column: str, *, at: Time | None = None) -> str:
        result: str = self._open_engine.drop_column(table, column, opt_micros(at))
        return result

    def alter_column(
        self, table: str, column: str, sql_type: str, *, at: Time | None = None
    ) -> str:
        result: str = self._open_engine.alter_column(table, column, sql_type, opt_micros(at))
        return result

    def rename_column(self, table: str, column: str, new_name: str) -> None:
        """sp_rename of a column; a captured one is refused, SchemaError 4928."""
        self._open_engine.rename_column(table, column, new_name)

    def rename_table(self, table: str, new_name: str) -> None:
        """sp_rename of a table within its schema; its capture instances go on capturing."""
        self._open_engine.rename_table(table, new_name)

    def commit(self, changes: Sequence[Change], *, at: Time | None = None) -> str:
        """Applies the changes as ONE transaction and returns its commit LSN."""
        result: str = self._open_engine.commit(_changes(changes), opt_micros(at))
        return result

    def commit_many(
        self,
        transactions: Sequence[Sequence[Change]],
        *,
        at: Time | Sequence[Time] | None = None,
    ) -> list[str]:
        """Each list its own transaction, all in one write of the file; all or nothing."""
        if at is None:
            times: list[int | None] = []
        elif isinstance(at, str | datetime):
            times = [to_micros(at)]
        else:
            times = [to_micros(t) for t in at]
        result: list[str] = self._open_engine.commit_many(
            [_changes(t) for t in transactions], times
        )
        return result

    def begin(self, *, at: Time | None = None) -> Transaction:
        """A Transaction that stays open across calls, so transactions can interleave."""
        return Transaction(self, self._open_engine.begin(opt_micros(at)))

    def idle(self, *, at: Time | None = None) -> str:
        """An idle entry: a new max LSN without change rows."""
        result: str = self._open_engine.idle(opt_micros(at))
        return result

    def advance(self, *, at: Time | None = None) -> datetime:
        """Runs the jobs due up to `at` (default: now), moves the clock there and returns it."""
        return from_micros(self._open_engine.advance(opt_micros(at)))

    def capture(self) -> str | None:
        """Manual mode: one capture cycle. Returns max_lsn()."""
        result: str | None = self._open_engine.capture()
        return result

    def drain(self) -> str | None:
        """Manual mode: capture cycles until nothing is pending. Returns max_lsn()."""
        result: str | None = self._open_engine.drain()
        return result

    def pending_capture(self) -> int:
        result: int = self._open_engine.pending_capture()
        return result

    def cleanup(self, capture_instance: str, low_water_mark: str | bytes) -> None:
        """sys.sp_cdc_cleanup_change_table: raise the mark, delete rows strictly below it."""
        self._open_engine.cleanup(capture_instance, lsn_arg(low_water_mark, "low_water_mark"))

    def run_cleanup_job(self, *, retention_minutes: int | None = None) -> None:
        """The cleanup job: retention counted from the newest entry, never the wall clock."""
        self._open_engine.run_cleanup_job(retention_minutes)

    def commit_before_read(self, changes: Sequence[Change], *, at: Time | None = None) -> None:
        """Hook: commits the changes at the start of the next table read."""
        self._open_engine.add_hook(
            "commit_before_read", "table", "", None, 0, _changes(changes), opt_micros(at)
        )

    def cleanup_before_read(
        self, capture_instance: str, low_water_mark: str | bytes, *, read: ReadKind = "changes"
    ) -> None:
        """Hook: cleans up at the start of the next read of that kind."""
        self._cleanup_hook("cleanup_before_read", read, capture_instance, low_water_mark, 0)

    def cleanup_during_read(
        self, capture_instance: str, low_water_mark: str | bytes, *, read: ReadKind = "changes"
    ) -> None:
        """Hook: cleans up after the next read of that kind fetched all its rows."""
        self._cleanup_hook("cleanup_during_read", read, capture_instance, low_water_mark, 0)

    def cleanup_mid_read(
        self, capture_instance: str, low_water_mark: str | bytes, *, after_rows: int
    ) -> None:
        """Hook: cleans up during the next change read, after `after_rows` rows."""
        mark = low_water_mark
        self._cleanup_hook("cleanup_mid_read", "changes", capture_instance, mark, after_rows)

    def _cleanup_hook(
        self, kind: str, read: str, capture_instance: str, mark: str | bytes, after_rows: int
    ) -> None:
        mark_text = lsn_arg(mark, "low_water_mark")
        self._open_engine.add_hook(kind, read, capture_instance, mark_text, after_rows, None, None)

    def inject_null_row(self, *, read: ReadKind = "changes") -> None:
        """Hook: the next read of that kind yields first one all-NULL row."""
        self._open_engine.add_hook("inject_null_row", read, "", None, 0, None, None)

    def pending_hooks(self) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self._open_engine.pending_hooks()
        return result

    def clear_hooks(self) -> int:
        result: int = self._open_engine.clear_hooks()
        return result

    def rows(self, table: str) -> list[dict[str, object]]:
        """The committed rows, sorted by primary key (a heap's by all columns, NULLs first)."""
        native = self._open_reader._reader()
        reader = record_batch_reader(
            lambda: native.read_table(table, None, None, None, None, 65_536, 64 << 20, True)
        )
        rows = to_pylist(reader)
        if not self._open_reader.table_info(table)["key_columns"]:
            rows.sort(key=lambda r: tuple((v is not None, v) for v in r.values()))
        return rows

    def change_rows(self, capture_instance: str) -> list[dict[str, object]]:
        """Every change-table column under its SQL Server name, in change-table order."""
        native = self._open_reader._reader()
        reader = record_batch_reader(
            lambda: native.read_changes(
                capture_instance,
                None,
                None,
                None,
                True,
                True,
                "all",
                65_536,
                64 << 20,
                "string",
                True,
            )
        )
        return to_pylist(reader)

    def min_lsn(self, capture_instance: str) -> str:
        """The stored low water mark; zeros for an unknown name or ''."""
        if not capture_instance:
            return zero_lsn()
        try:
            mark: str = self._open_reader.resolve_instance(capture_instance)["low_water_mark"]
        except UnknownObjectError:
            return zero_lsn()
        return mark

    def max_lsn(self) -> str | None:
        return self._open_reader.max_lsn()

    def lsn_time(self, lsn: str | bytes) -> datetime | None:
        """UTC time of exactly that entry, None for any other LSN."""
        micros: int | None = self._open_reader._reader().lsn_to_utc(lsn_arg(lsn))
        return None if micros is None else from_micros(micros)

    def capture_instances(self, table: str) -> list[str]:
        """Names oldest first, [] if none."""
        return [i["name"] for i in self._open_reader.capture_instances(table)]

    def lsn_time_mapping(self) -> list[dict[str, object]]:
        """Every entry in LSN order, with UTC times (the reader's are server-local)."""
        entries: list[dict[str, Any]] = self._open_reader._reader().lsn_time_mapping()
        for e in entries:
            e["tran_begin_time"] = from_micros(e.pop("tran_begin_utc"))
            e["tran_end_time"] = from_micros(e.pop("tran_end_utc"))
        return list(entries)

    def captured_columns(self, capture_instance: str) -> list[dict[str, Any]]:
        return self._open_reader.captured_columns(capture_instance)

    def ddl_history(self, capture_instance: str) -> list[dict[str, Any]]:
        """Every DDL entry of the instance in LSN order, ddl_time in UTC."""
        entries: list[dict[str, Any]] = self._open_reader._reader().ddl_history(
            capture_instance, zero_lsn(), "0x" + "F" * 20
        )
        for entry in entries:
            entry["ddl_time"] = from_micros(entry.pop("ddl_time_utc"))
        return entries

    def tables(self) -> list[str]:
        return self._open_reader.tables()

    def now(self) -> datetime:
        """The later of the wall clock and the emulator's last time, naive UTC."""
        last = from_micros(self._open_engine.last_time())
        wall = datetime.now(UTC).replace(tzinfo=None)
        return max(last, wall)

    def update_statistics(self, table: str) -> KeyStatistics:
        """UPDATE STATISTICS `table` WITH FULLSCAN: build the statistics of its primary key.
        ConfigError for a heap."""
        return self._open_reader.update_statistics(table)

    def reader(self, *, user: str | None = None) -> EmulatorReader:
        """A new reader of this file, with its own connection and its own `close()`; it reads
        as database `user` (create_user) or, by default, as dbo."""
        _ = self._open_reader  # a closed Emulator hands out nothing
        return EmulatorReader(self._path, user=user)

    def serve(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        database: str | None = None,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        tls: bool = False,
        login: str = "sa",
        password: str | None = None,
        access_token: str | None = None,
        log_statements: str | os.PathLike[str] | bool = False,
    ) -> TdsServer:
        """Return a running TDS server over this file: `mssql_cdc.emulator.serve.serve`, whose
        `access_token` (with `tls`) is the one Microsoft Entra token it also accepts."""
        return serve(
            self._path,
            host=host,
            port=port,
            database=database,
            max_connections=max_connections,
            tls=tls,
            login=login,
            password=password,
            access_token=access_token,
            log_statements=log_statements,
        )


class Transaction:
    """An open transaction of one Emulator (`Emulator.begin`): execute (validates, takes seqvals,
    holds the rows against READ COMMITTED readers) any number of times, then commit or rollback."""

    def __init__(self, emulator: Emulator, txn_id: int) -> None:
        self._emulator = emulator
        self._id = txn_id
        self._open = True

    def _check(self) -> None:
        if not self._open:
            raise ValueError("this Transaction is committed or rolled back; begin a new one")

    def execute(self, changes: Sequence[Change]) -> None:
        self._check()
        self._emulator._open_engine.execute(self._id, _changes(changes))

    def commit(self, *, at: Time | None = None) -> str:
        self._check()
        self._open = False
        result: str = self._emulator._open_engine.commit_open(self._id, opt_micros(at))
        return result

    def rollback(self) -> None:
        if self._open:
            self._open = False
            self._emulator._open_engine.rollback(self._id)
