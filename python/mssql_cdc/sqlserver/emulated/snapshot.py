"""SnapshotReader and ChunkPlanner over an emulator file: a table's columns, keys and rows.

Source-table reads run at the configured isolation level as over TDS (decision 1335): at
readCommitted they wait for rows an open emulator Transaction holds, up to `lockTimeoutMs`; at
snapshot they read the last committed rows, refused (error 3952) unless the emulator allows
snapshot isolation. Key bounds are the emulator's own values (int, str, bytes, ...) or the text
a chunk plan stored (JSON holds no dates), turned back into the key column's value
(`emulator_bound`) and compared by the engine as SQL Server compares them.
Integer-led keys are planned by one-row seeks (`first_key_from`; decision 1412), other keys by
the primary key's statistics histogram (`EmulatorReader.statistics`; decision 1448).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mssql_cdc.core import typed_part
from mssql_cdc.emulator import EmulatorReader
from mssql_cdc.errors import ConfigError
from mssql_cdc.options import IsolationLevel, KeyBound
from mssql_cdc.sqlserver.emulated.local_time import (
    text_scales,
    times_as_text,
)
from mssql_cdc.sqlserver.histogram import StatsStep, histogram_cuts
from mssql_cdc.sqlserver.isolation import source_read_errors
from mssql_cdc.sqlserver.key_seeks import INTEGER_RANGES, extent_by_seeks
from mssql_cdc.sqlserver.metadata import ReadColumn, TableColumn
from mssql_cdc.sqlserver.tsql.arrow import MAX_BATCH_BYTES, cast_batches, table_schema

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["EmulatorSnapshotReader", "emulator_bound"]


def emulator_bound(bound: KeyBound, sql_types: Sequence[str | None]) -> KeyBound:
    """`bound` with each text part that stands for a date, time, decimal or binary value
    turned into that value, as the engine takes it (the CAST a T-SQL backend asks for)."""
    if bound is None:
        return None
    parts = bound if isinstance(bound, tuple) else (bound,)
    if len(parts) != len(sql_types):
        raise ValueError(
            f"a bound has {len(parts)} key parts for a key of {len(sql_types)} columns"
        )
    typed = tuple(typed_part(p, t) for p, t in zip(parts, sql_types, strict=True))
    return typed if isinstance(bound, tuple) else typed[0]  # type: ignore[return-value]


def _time_scale(sql_type: str) -> int:
    """The fractional digits of a time, datetime2 or datetimeoffset type as sys.columns.scale
    gives them (`datetime2(7)`: 7); 0 for other types, as the emulator states no scale."""
    base, _, rest = sql_type.partition("(")
    if base.strip().lower() not in ("time", "datetime2", "datetimeoffset"):
        return 0
    return int(rest.rstrip(")")) if rest else 7


class EmulatorSnapshotReader:
    """SnapshotReader and ChunkPlanner over one emulator file; pickles as its path."""

    def __init__(
        self,
        path: str,
        *,
        isolation: IsolationLevel = "readCommitted",
        lock_timeout_ms: int | None = None,
    ) -> None:
        self._path = path
        self._isolation: IsolationLevel = isolation
        self._lock_timeout_ms = lock_timeout_ms
        self._reader: EmulatorReader | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {
            "path": self._path,
            "isolation": self._isolation,
            "lock_timeout_ms": self._lock_timeout_ms,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(  # type: ignore[misc]
            state["path"],
            isolation=state.get("isolation", "readCommitted"),
            lock_timeout_ms=state.get("lock_timeout_ms"),
        )

    @property
    def reader(self) -> EmulatorReader:
        if self._reader is None:
            self._reader = EmulatorReader(
                self._path, isolation=self._isolation, lock_timeout_ms=self._lock_timeout_ms
            )
        return self._reader

    def _errors(self, table: str) -> AbstractContextManager[None]:
        """Errors 3952 and 1222 of a read of `table` as ConfigError and LockTimeoutError."""
        database = Path(self._path).stem
        schema, _, name = table.partition(".")
        return source_read_errors(
            table=f"[{schema}].[{name}]", lock_timeout_ms=self._lock_timeout_ms, database=database
        )

    def table_columns(self, source_schema: str, source_table: str) -> Sequence[TableColumn]:
        info = self.reader.table_info(f"{source_schema}.{source_table}")
        return [
            TableColumn(
                name=str(c["name"]),
                column_id=int(c["column_id"]),
                sql_type=str(c["sql_type"]).split("(", 1)[0].lower(),
                is_computed=bool(c.get("is_computed", False)),
                collation=None if c.get("collation") is None else str(c["collation"]),
                scale=_time_scale(str(c["sql_type"])),
            )
            for c in info["columns"]
        ]

    def _key_types(
        self, source_schema: str, source_table: str, keys: Sequence[str]
    ) -> list[str | None]:
        types = {c.name: c.sql_type for c in self.table_columns(source_schema, source_table)}
        return [types.get(k) for k in keys]

    def _key_check(self, source_schema: str, source_table: str, keys: Sequence[str]) -> None:
        """Refuse keys this reader cannot cut into chunks: a missing column, or a time key of
        seven fractional digits, whose bounds the native key path holds in microseconds (two
        keys less than 1 us apart could fall on the wrong side of a bound and be missed)."""
        by_name = {c.name: c for c in self.table_columns(source_schema, source_table)}
        missing = [k for k in keys if k not in by_name]
        if missing:
            raise ConfigError(
                f"snapshot key column {missing[0]!r} is not a column of "
                f"[{source_schema}].[{source_table}]; fix snapshotKeys"
            )
        fine = [by_name[k] for k in keys if by_name[k].scale > 6]  # scale: time types only
        if fine:
            c = fine[0]
            raise ConfigError(
                f"snapshot key column {c.name!r} of [{source_schema}].[{source_table}] is "
                f"{c.sql_type}({c.scale}): the in-process emulator cuts chunks in microseconds, "
                "so keys less than 1 us apart could be missed; read it over TDS (backend "
                "pymssql or mssql-python against `mssql-cdc emulator serve`), snapshot the "
                f"table whole (no snapshotChunks), or make the column {c.sql_type}(6)"
            )

    def key_extent(self, source_schema: str, source_table: str, key: str) -> tuple[int, int] | None:
        """The lowest and highest non-NULL value of one integer key column by one-row seeks;
        None for an empty table."""
        by_name = {c.name: c for c in self.table_columns(source_schema, source_table)}
        column = by_name.get(key)
        if column is None or column.sql_type not in INTEGER_RANGES:
            raise ValueError(f"key column {key!r} is not an integer column of the table")
        table = f"{source_schema}.{source_table}"

        def first_at_or_above(value: int) -> int | None:
            found = self.reader.first_key_from(table, value, key_columns=[key])
            return None if found is None else int(found)  # type: ignore[call-overload]

        with self._errors(table):
            return extent_by_seeks(first_at_or_above, column.sql_type)

    def first_keys(
        self, source_schema: str, source_table: str, keys: Sequence[str], firsts: Sequence[int]
    ) -> list[KeyBound]:
        """For each integer value of the first key column, in rising order, the smallest key
        whose first column is at or above it (a tuple for a composite key): one seek each.
        Repeats and values above every key are dropped."""
        self._key_check(source_schema, source_table, keys)
        table = f"{source_schema}.{source_table}"
        bounds: list[KeyBound] = []
        with self._errors(table):
            for value in firsts:
                found = _bound(self.reader.first_key_from(table, value, key_columns=list(keys)))
                if found is not None and (not bounds or found != bounds[-1]):
                    bounds.append(found)
        return bounds

    def histogram_bounds(
        self, source_schema: str, source_table: str, keys: Sequence[str], n: int
    ) -> list[KeyBound] | None:
        """Up to `n - 1` bounds read off the primary key's statistics histogram, as the T-SQL
        backend reads them: step bounds of the first key column; for a composite key the
        smallest whole key at or above each, one seek each. Missing or stale statistics are
        built first (AUTO_UPDATE_STATISTICS). None when the primary key is not led by the
        first key column or its histogram is empty."""
        self._key_check(source_schema, source_table, keys)
        table = f"{source_schema}.{source_table}"
        info = self.reader.table_info(table)
        lead = info["key_columns"][:1]
        if not lead or lead[0].lower() != keys[0].lower():
            return None
        with self._errors(table):
            stats = self.reader.statistics(table)
            if stats is None or not stats.histogram:
                return None
            steps = [StatsStep(s.range_hi_key, s.range_rows, s.eq_rows) for s in stats.histogram]
            cuts = histogram_cuts(steps, n)
            if len(keys) == 1:
                return [_bound(c) for c in cuts]
            bounds: list[KeyBound] = []
            for value in cuts:
                found = _bound(self.reader.first_key_from(table, value, key_columns=list(keys)))
                if found is not None and (not bounds or found != bounds[-1]):
                    bounds.append(found)
        return bounds

    def key_tiles(
        self, source_schema: str, source_table: str, keys: Sequence[str], n: int
    ) -> Sequence[KeyBound]:
        """First keys of tiles 2..n in key order (a tuple for a composite key)."""
        self._key_check(source_schema, source_table, keys)
        table = f"{source_schema}.{source_table}"
        with self._errors(table):
            tiles = self.reader.key_tiles(table, n, key_columns=keys)
        return [_bound(t) for t in tiles]

    def key_buckets(
        self, source_schema: str, source_table: str, key: str, n: int, lo: int, hi: int
    ) -> Sequence[tuple[int, int, int]]:
        table = f"{source_schema}.{source_table}"
        with self._errors(table):
            return self.reader.key_buckets(table, n, lo, hi, key_columns=[key])

    def key_at(
        self,
        source_schema: str,
        source_table: str,
        keys: Sequence[str],
        start: KeyBound,
        *,
        inclusive: bool,
        position: int,
    ) -> KeyBound:
        """The key at 0-based `position` among keys at or after `start` (after it when not
        `inclusive`; a None start is the table's first key); None past the end."""
        self._key_check(source_schema, source_table, keys)
        table = f"{source_schema}.{source_table}"
        typed = emulator_bound(start, self._key_types(source_schema, source_table, keys))
        with self._errors(table):
            return self._key_at(table, keys, typed, inclusive=inclusive, position=position)

    def _key_at(
        self, table: str, keys: Sequence[str], start: object, *, inclusive: bool, position: int
    ) -> KeyBound:
        lo: object = start
        if start is not None and not inclusive:
            lo = self.reader.next_key(table, lo, key_columns=keys)
            if lo is None:
                return None
        stream = self.reader.read_table(
            table, lo, None, columns=list(keys), key_columns=list(keys), batch_rows=position + 1
        )
        remaining = position
        for batch in stream:
            if batch.num_rows > remaining:
                row = [batch.column(i)[remaining].as_py() for i in range(len(keys))]
                return _bound(row[0] if len(row) == 1 else tuple(row))
            remaining -= batch.num_rows
        return None

    def row_count(self, source_schema: str, source_table: str) -> int | None:
        return int(self.reader.table_info(f"{source_schema}.{source_table}")["row_count"])

    def read_table(
        self,
        source_schema: str,
        source_table: str,
        *,
        columns: Sequence[ReadColumn],
        keys: Sequence[str],
        lo: KeyBound,
        hi: KeyBound,
        batch_rows: int,
    ) -> Iterator[pa.RecordBatch]:
        """Yield the rows with `lo <= key < hi` (open ends None) as batches of `columns`."""
        found = self.table_columns(source_schema, source_table)
        present = {c.name for c in found}
        scales = text_scales(columns, {c.name: f"{c.sql_type}({c.scale})" for c in found})
        table = f"{source_schema}.{source_table}"
        names = [c.name for c in columns if c.name in present]
        types = self._key_types(source_schema, source_table, keys)
        with self._errors(table):
            raw_batches = self.reader.read_table(
                table,
                emulator_bound(lo, types) if keys else lo,
                emulator_bound(hi, types) if keys else hi,
                columns=names,
                key_columns=list(keys) or None,
                batch_rows=batch_rows,
                batch_bytes=MAX_BATCH_BYTES,
                text_columns=list(scales),
            )
        # Declared columns the table no longer has read NULL.
        raw = (times_as_text(b) for b in raw_batches)
        yield from cast_batches(raw, table_schema(columns), {})

    def close(self) -> None:
        self._reader = None


def _bound(key: object) -> KeyBound:
    if isinstance(key, list):
        key = tuple(key)
    return key  # type: ignore[return-value]  # the emulator's scalar or tuple key
