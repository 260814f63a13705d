"""EmulatorReader: the read interface the Spark source plans and reads with.

docs/emulator.md, 'Read side', lists its calls and what each models.

Every call is one read transaction of the emulator file, so it sees whole commits only. LSNs are
canonical text ("0x" + 20 upper-case hex digits); times are naive server-local datetimes of the
zone `server_time_zone()` names, as SQL Server stores them.
The object pickles as its path, and opens its connection lazily in the process that uses it
(again after a fork), so Spark can ship it to Python workers.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa

import mssql_cdc._native as _native
from mssql_cdc.core import lsn
from mssql_cdc.emulator._convert import (
    Time,
    from_micros,
    lsn_arg,
    record_batch_reader,
    to_micros,
)
from mssql_cdc.emulator.statistics import KeyStatistics, key_statistics

DEFAULT_BATCH_ROWS = 65_536
DEFAULT_BATCH_BYTES = 64 << 20

KeyValue = object
Key = tuple[object, ...]


def _key(value: object) -> object:
    """A key as the native layer takes it: a tuple, or a scalar for one key column."""
    return tuple(value) if isinstance(value, list) else value


def _local_create_date(instance: dict[str, Any]) -> None:
    instance["create_date"] = from_micros(instance["create_date"])
    del instance["create_date_utc"]  # the reader gives server-local times only


def _scalar_or_tuple(key: Key | None) -> object:
    if key is None:
        return None
    return key[0] if len(key) == 1 else key


Isolation = Literal["readCommitted", "snapshot"]
"""A reader session's isolation level for source-table reads (SET TRANSACTION ISOLATION LEVEL)."""


class EmulatorReader:
    """Reads an emulator file the way the library reads SQL Server's CDC tables.

    Attributes:
        path: the emulator file it reads.
        user: the database user it reads as (`Emulator.create_user`); None reads as dbo, who
            may read every capture instance.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        user: str | None = None,
        isolation: Isolation = "readCommitted",
        lock_timeout_ms: int | None = None,
    ) -> None:
        """`user`: the database user to read as (Emulator.create_user); None reads as dbo.

        `isolation` and `lock_timeout_ms` are the session's SET TRANSACTION ISOLATION LEVEL and
        SET LOCK_TIMEOUT for source-table reads (`read_table`, the key planning reads): at
        "readCommitted" a read waits for rows an open Transaction holds, up to
        `lock_timeout_ms` (None: the file's lock_timeout_ms setting), then BusyError 1222; at
        "snapshot" it reads the last committed rows at once, or ArgumentError 3952 when the
        allow_snapshot_isolation setting is off (docs/emulator.md, 'Locks and isolation').
        """
        self._path = Path(path)
        self._user = user
        self._isolation: Isolation = isolation
        self._lock_timeout_ms = lock_timeout_ms
        self._native: Any = None
        self._pid = -1
        self._closed = False

    def __reduce__(self) -> tuple[Any, tuple[str, str | None, Isolation, int | None]]:
        return (
            _open_reader,
            (str(self._path), self._user, self._isolation, self._lock_timeout_ms),
        )

    def __repr__(self) -> str:
        user = "" if self._user is None else f", user={self._user!r}"
        return f"EmulatorReader({str(self._path)!r}{user})"

    @property
    def user(self) -> str | None:
        """The database user this reader reads as; None is dbo."""
        return self._user

    @property
    def path(self) -> Path:
        """The emulator file this reader reads."""
        return self._path

    def close(self) -> None:
        """Drop the connection; later calls raise ValueError. A stream already returned reads on."""
        self._closed = True
        self._native = None

    def _reader(self) -> Any:
        if self._closed:
            raise ValueError(f"the EmulatorReader for {self._path} is closed; open a new one")
        if self._native is None or self._pid != os.getpid():
            native = _native.emu.Reader(str(self._path))
            if self._user is not None:
                native.act_as(self._user)  # UnknownObjectError 15151 for no such user
            timeout = -1 if self._lock_timeout_ms is None else self._lock_timeout_ms
            native.set_isolation(self._isolation, timeout)
            self._native = native
            self._pid = os.getpid()
        return self._native

    @contextmanager
    def snapshot(self) -> Iterator[EmulatorReader]:
        """Groups the metadata calls inside it in one read transaction (one consistent view)."""
        native = self._reader()
        native.begin_snapshot()
        try:
            yield self
        finally:
            native.end_snapshot()

    def max_lsn(self) -> str | None:
        """The newest entry of lsn_time_mapping (idle ones too); None while there is none."""
        result: str | None = self._reader().max_lsn()
        return result

    def max_commit_lsn(self) -> str | None:
        """The newest commit entry (tran_id not zero)."""
        result: str | None = self._reader().max_commit_lsn()
        return result

    def min_lsn(self, capture_instance: str) -> str | None:
        """sys.fn_cdc_get_min_lsn: zeros for an unknown name or one the user may not read, None
        until capture reaches the instance, else its low water mark."""
        result: str | None = self._reader().min_lsn(capture_instance)
        return result

    def may_read(self, capture_instance: str) -> bool:
        """Whether this reader's user may read the instance's change data (db_owner, or a
        member of its gating role); True for dbo and for an unknown name."""
        result: bool = self._reader().may_read(capture_instance)
        return result

    def increment_lsn(self, value: str) -> str:
        return lsn.increment(value)

    def decrement_lsn(self, value: str) -> str:
        return lsn.decrement(value)

    def lsn_to_time(self, value: str | bytes) -> datetime | None:
        """The commit time of exactly that entry, or None."""
        micros: int | None = self._reader().lsn_to_time(lsn_arg(value))
        return None if micros is None else from_micros(micros)

    def time_at_or_below(self, value: str | bytes) -> datetime | None:
        """The commit time of an LSN as the library defines it: the time of the newest entry
        at or below it (idle entries count), or None when there is none."""
        micros: int | None = self._reader().time_at_or_below(lsn_arg(value))
        return None if micros is None else from_micros(micros)

    def commit_times(self) -> list[tuple[str, datetime]]:
        """Every entry of cdc.lsn_time_mapping in LSN order: start_lsn and tran_end_time, in the
        server's local time as SQL Server stores it."""
        return [
            (str(e["start_lsn"]), from_micros(int(e["tran_end_time"])))
            for e in self._reader().lsn_time_mapping()
        ]

    def time_to_lsn(self, relation: str, time: Time) -> str | None:
        """sys.fn_cdc_map_time_to_lsn with one of its four relations."""
        result: str | None = self._reader().time_to_lsn(relation, to_micros(time))
        return result

    def nth_commit_after(
        self, after: str | bytes, n: int, capture_instance: str | None = None
    ) -> str | None:
        """The n-th entry above `after`, or the n-th distinct commit of one change table."""
        result: str | None = self._reader().nth_commit_after(lsn_arg(after), n, capture_instance)
        return result

    def split_points(
        self, capture_instance: str, from_lsn: str | None, to_lsn: str | None, n: int
    ) -> list[tuple[str, int]]:
        """At most n tiles of [from_lsn, to_lsn] that never split a commit: (last LSN, rows)."""
        result: list[tuple[str, int]] = self._reader().split_points(
            capture_instance, from_lsn, to_lsn, n
        )
        return result

    def read_changes(
        self,
        capture_instance: str,
        from_lsn: str | None,
        to_lsn: str | None,
        *,
        columns: Sequence[str] | None = None,
        include_command_id: bool = True,
        include_update_mask: bool = False,
        row_filter: str = "all update old",
        batch_rows: int = DEFAULT_BATCH_ROWS,
        batch_bytes: int = DEFAULT_BATCH_BYTES,
        lsn_format: str = "string",
        text_columns: Sequence[str] = (),
    ) -> pa.RecordBatchReader:
        """The change rows with from_lsn <= __$start_lsn <= to_lsn, sorted by (start_lsn,
        command_id, seqval, operation), streamed in batches of at most batch_rows rows.

        `text_columns`: `datetime2`/`datetimeoffset` columns to read as Arrow strings, the
        text CONVERT(nvarchar(max), ...) writes from all seven stored digits (`yyyy-mm-dd
        hh:mm:ss.nnnnnnn`, the column's scale of digits; ` +00:00` after a datetimeoffset's UTC
        instant); ConfigError for another column or one the read does not return."""
        native = self._reader()
        return record_batch_reader(
            lambda: native.read_changes(
                capture_instance,
                from_lsn,
                to_lsn,
                None if columns is None else list(columns),
                include_command_id,
                include_update_mask,
                row_filter,
                batch_rows,
                batch_bytes,
                lsn_format,
                False,
                list(text_columns),
            )
        )

    def read_table(
        self,
        table: str,
        lo: object = None,
        hi: object = None,
        *,
        columns: Sequence[str] | None = None,
        key_columns: Sequence[str] | None = None,
        batch_rows: int = DEFAULT_BATCH_ROWS,
        batch_bytes: int = DEFAULT_BATCH_BYTES,
        text_columns: Sequence[str] = (),
    ) -> pa.RecordBatchReader:
        """Committed rows with lo <= key < hi (open where None) in key order, as of one snapshot;
        `text_columns` as `read_changes` takes it."""
        native = self._reader()
        return record_batch_reader(
            lambda: native.read_table(
                table,
                _key(lo),
                _key(hi),
                None if columns is None else list(columns),
                None if key_columns is None else list(key_columns),
                batch_rows,
                batch_bytes,
                False,
                list(text_columns),
            )
        )

    def captured_columns(self, capture_instance: str) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self._reader().captured_columns(capture_instance)
        return result

    def ddl_history(
        self, capture_instance: str, after: str | None = None, upto: str | None = None
    ) -> list[dict[str, Any]]:
        """DDL entries with after < ddl_lsn <= upto, in LSN order; ddl_time server-local."""
        entries: list[dict[str, Any]] = self._reader().ddl_history(
            capture_instance,
            lsn_arg(after) if after is not None else str(lsn.ZERO),
            lsn_arg(upto) if upto is not None else "0x" + "F" * 20,
        )
        for entry in entries:
            entry["ddl_time"] = from_micros(entry["ddl_time"])
            del entry["ddl_time_utc"]  # the Emulator face's
        return entries

    def capture_instances(self, table: str) -> list[dict[str, Any]]:
        """The table's instances, oldest first."""
        instances: list[dict[str, Any]] = self._reader().capture_instances(table)
        for instance in instances:
            _local_create_date(instance)
        return instances

    def resolve_instance(self, capture_instance: str) -> dict[str, Any]:
        instance: dict[str, Any] = self._reader().resolve_instance(capture_instance)
        _local_create_date(instance)
        return instance

    def table_info(self, table: str) -> dict[str, Any]:
        result: dict[str, Any] = self._reader().table_info(table)
        return result

    def key_extent(
        self, table: str, *, key_columns: Sequence[str] | None = None
    ) -> dict[str, Any] | None:
        """min, max (keys) and rows, or None for an empty table."""
        extent: dict[str, Any] | None = self._reader().key_extent(
            table, None if key_columns is None else list(key_columns)
        )
        if extent is not None:
            extent["min"] = _scalar_or_tuple(extent["min"])
            extent["max"] = _scalar_or_tuple(extent["max"])
        return extent

    def key_tiles(
        self,
        table: str,
        n: int | None = None,
        *,
        rows_per_tile: int | None = None,
        key_columns: Sequence[str] | None = None,
    ) -> list[object]:
        """NTILE bounds: the first key of each tile after the first."""
        if (n is None) == (rows_per_tile is None):
            raise ValueError("key_tiles: give either n or rows_per_tile")
        tiles: list[Key] = self._reader().key_tiles(
            table, n or 0, rows_per_tile or 0, None if key_columns is None else list(key_columns)
        )
        return [_scalar_or_tuple(t) for t in tiles]

    def next_key(
        self, table: str, after: object, *, key_columns: Sequence[str] | None = None
    ) -> object:
        """The smallest key above `after`, or None."""
        key: Key | None = self._reader().next_key(
            table, _key(after), None if key_columns is None else list(key_columns)
        )
        return _scalar_or_tuple(key)

    def first_key_from(
        self, table: str, first: object, *, key_columns: Sequence[str] | None = None
    ) -> object:
        """The smallest key whose first column is at or above `first` (one seek reading at most
        one row), or None."""
        key: Key | None = self._reader().first_key_from(
            table, first, None if key_columns is None else list(key_columns)
        )
        return _scalar_or_tuple(key)

    def statistics(self, table: str, *, auto_update: bool = True) -> KeyStatistics | None:
        """The statistics of `table`'s primary key; None for a heap. With `auto_update`,
        missing or stale ones (past SQL Server's AUTO_UPDATE_STATISTICS threshold) are built
        first, by a full scan counted apart in `io_statistics`."""
        found: dict[str, Any] | None = self._reader().statistics(table, auto_update, False)
        return None if found is None else key_statistics(found)

    def update_statistics(self, table: str) -> KeyStatistics:
        """UPDATE STATISTICS `table` WITH FULLSCAN: build the primary key's statistics now.
        ConfigError for a heap."""
        found: dict[str, Any] = self._reader().statistics(table, True, True)
        return key_statistics(found)

    def key_buckets(
        self,
        table: str,
        n: int,
        lo: int | None = None,
        hi: int | None = None,
        *,
        key_columns: Sequence[str] | None = None,
    ) -> list[tuple[int, int, int]]:
        """n equal-width integer intervals of [lo, hi) with their row counts."""
        result: list[tuple[int, int, int]] = self._reader().key_buckets(
            table, n, lo, hi, None if key_columns is None else list(key_columns)
        )
        return result

    def server_time_zone(self) -> str:
        """The IANA name of the zone the reader's times are local to ("UTC" by default)."""
        result: str = self._reader().server_time_zone()
        return result

    def tables(self) -> list[str]:
        result: list[str] = self._reader().tables()
        return result


def _open_reader(
    path: str,
    user: str | None,
    isolation: Isolation = "readCommitted",
    lock_timeout_ms: int | None = None,
) -> EmulatorReader:
    """Unpickle an EmulatorReader: its path, user and session settings, never a live handle."""
    return EmulatorReader(path, user=user, isolation=isolation, lock_timeout_ms=lock_timeout_ms)
