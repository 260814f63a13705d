"""SnapshotReader over T-SQL: a source table's columns, key planning and rows of a key range.

Every source-table read first sets the isolation level explicitly (READ COMMITTED or
SNAPSHOT; never NOLOCK) and, when configured, `SET LOCK_TIMEOUT`. Run over TDS against the
emulator's front end, not yet against a live server (docs/sqlserver.md).
Integer-led keys are planned by one-row seeks (decision 1412), other keys by the primary key's
statistics histogram when the server gives one.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from mssql_cdc.errors import ConfigError
from mssql_cdc.options import IsolationLevel, KeyBound
from mssql_cdc.sqlserver.histogram import StatsStep, histogram_cuts
from mssql_cdc.sqlserver.isolation import source_read_errors
from mssql_cdc.sqlserver.key_seeks import extent_by_seeks
from mssql_cdc.sqlserver.metadata import ReadColumn, TableColumn
from mssql_cdc.sqlserver.tsql import chunks as tsql_chunks
from mssql_cdc.sqlserver.tsql import snapshot as tsql_snapshot
from mssql_cdc.sqlserver.tsql import statements as tsql
from mssql_cdc.sqlserver.tsql.arrow import fetch_batches, table_schema
from mssql_cdc.sqlserver.tsql.drivers import Session, error_number

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["TsqlSnapshotReader"]

_log = logging.getLogger("mssql_cdc.sqlserver.snapshot")
# What a server answers when it shows no histogram: no such object (a server older than
# sys.dm_db_stats_histogram, SQL Server 2016 SP1 CU2), and permission refusals.
_NO_HISTOGRAM = frozenset({208, 229, 297, 300})


class TsqlSnapshotReader:
    """SnapshotReader and ChunkPlanner over T-SQL, with one session and the snapshot's
    isolation settings."""

    def __init__(
        self, session: Session, *, isolation: IsolationLevel, lock_timeout_ms: int | None
    ) -> None:
        self._session = session
        self._isolation = isolation
        self._lock_timeout_ms = lock_timeout_ms
        self._columns: dict[tuple[str, str], list[TableColumn]] = {}

    def table_columns(self, source_schema: str, source_table: str) -> Sequence[TableColumn]:
        key = (source_schema, source_table)
        if key not in self._columns:
            rows = self._session.rows(tsql.table_columns(source_schema, source_table))
            if not rows:
                raise ConfigError(
                    f"table [{source_schema}].[{source_table}] does not exist or this login "
                    "cannot see it; grant SELECT on it to read snapshots"
                )
            self._columns[key] = [
                TableColumn(
                    name=str(r["name"]),
                    column_id=int(r["column_id"]),
                    sql_type=str(r["base_type"]).lower(),
                    is_computed=bool(r["is_computed"]),
                    collation=None if r.get("collation_name") is None else str(r["collation_name"]),
                    max_length=int(r.get("max_length") or 0),
                    precision=int(r.get("precision") or 0),
                    scale=int(r.get("scale") or 0),
                )
                for r in rows
            ]
        return self._columns[key]

    def key_columns(
        self,
        source_schema: str,
        source_table: str,
        keys: Sequence[str],
        *,
        purpose: str = "snapshot",
        setting: str = "snapshotKeys",
    ) -> list[TableColumn]:
        """The table's columns named by `keys`, in their order.

        Raises:
            ConfigError: a key names no column; the message names the `purpose` of the keys
                and the `setting` that gave them.
        """
        by_name = {c.name: c for c in self.table_columns(source_schema, source_table)}
        missing = [k for k in keys if k not in by_name]
        if missing:
            raise ConfigError(
                f"{purpose} key column {missing[0]!r} is not a column of "
                f"[{source_schema}].[{source_table}]; fix {setting}"
            )
        return [by_name[k] for k in keys]

    def _prepare(self) -> None:
        self._session.run(tsql.set_isolation(self._isolation))
        if self._lock_timeout_ms is not None:
            self._session.run(tsql.set_lock_timeout(self._lock_timeout_ms))

    def _errors(self, source_schema: str, source_table: str) -> AbstractContextManager[None]:
        """Errors 3952 and 1222 of a read of the table as ConfigError and LockTimeoutError."""
        return source_read_errors(
            table=f"[{source_schema}].[{source_table}]", lock_timeout_ms=self._lock_timeout_ms
        )

    def _rows(
        self, statement: tsql.Statement, source_schema: str, source_table: str
    ) -> list[dict[str, Any]]:
        self._prepare()
        with self._errors(source_schema, source_table):
            return self._session.rows(statement)

    def key_extent(self, source_schema: str, source_table: str, key: str) -> tuple[int, int] | None:
        """The lowest and highest non-NULL value of one integer key column by one-row seeks;
        None for an empty table."""
        [column] = self.key_columns(source_schema, source_table, [key])
        if column.sql_type not in tsql_snapshot.INTEGER_TYPES:
            raise ValueError(f"key column {key!r} is {column.sql_type}, not an integer type")

        def first_at_or_above(value: int) -> int | None:
            found = self._first_key_from(source_schema, source_table, [column], value)
            return None if found is None else int(str(found))

        return extent_by_seeks(first_at_or_above, column.sql_type)

    def first_keys(
        self, source_schema: str, source_table: str, keys: Sequence[str], firsts: Sequence[int]
    ) -> list[KeyBound]:
        """For each integer value of the first key column, in rising order, the smallest key
        whose first column is at or above it, as server-made text (a tuple for a composite key):
        one seek each. Repeats and values above every key are dropped."""
        columns = self.key_columns(source_schema, source_table, keys)
        bounds: list[KeyBound] = []
        for value in firsts:
            found = self._first_key_from(source_schema, source_table, columns, value)
            if found is not None and (not bounds or found != bounds[-1]):
                bounds.append(found)
        return bounds

    def _first_key_from(
        self, source_schema: str, source_table: str, columns: Sequence[TableColumn], value: int
    ) -> KeyBound:
        statement = tsql_snapshot.first_key_from(source_schema, source_table, columns, value)
        return _key_of(self._rows(statement, source_schema, source_table), len(columns))

    def histogram_bounds(
        self, source_schema: str, source_table: str, keys: Sequence[str], n: int
    ) -> list[KeyBound] | None:
        """Up to `n - 1` bounds read off the primary key's statistics histogram, cutting the
        table into parts of about equal rows without reading it: step bounds of the first key
        column, as server-made text; for a composite key, the smallest whole key at or above
        each, one seek each. None when the server shows no histogram over the
        first key column (no primary key led by it, no statistics, no permission, no
        sys.dm_db_stats_histogram), which the caller answers by NTILE."""
        columns = self.key_columns(source_schema, source_table, keys)
        if tsql_snapshot.key_type(columns[0]) is None:
            return None
        table = f"[{source_schema}].[{source_table}]"
        try:
            stats = self._session.rows(tsql_snapshot.key_statistics(source_schema, source_table))
            if not stats or str(stats[0]["lead"]).lower() != columns[0].name.lower():
                _log.info("%s has no primary key led by %s to read statistics of", table, keys[0])
                return None
            statement = tsql_snapshot.stats_histogram(
                source_schema, source_table, columns[0], int(stats[0]["stats_id"])
            )
            rows = self._session.rows(statement)
        except Exception as exc:  # re-raised unless the server shows no histogram
            if error_number(exc) not in _NO_HISTOGRAM:
                raise
            _log.info("the server shows no statistics histogram of %s: %s", table, exc)
            return None
        steps = [
            StatsStep(str(r["k0"]), float(r["range_rows"]), float(r["equal_rows"]))
            for r in rows
            if r["k0"] is not None
        ]
        if not steps:
            _log.info("the statistics of %s's primary key have no histogram", table)
            return None
        cuts = histogram_cuts(steps, n)
        if len(columns) == 1:
            return [str(c) for c in cuts]
        bounds: list[KeyBound] = []
        for value in cuts:
            statement = tsql_snapshot.first_key_at(source_schema, source_table, columns, str(value))
            found = _key_of(self._rows(statement, source_schema, source_table), len(columns))
            if found is not None and (not bounds or found != bounds[-1]):
                bounds.append(found)
        return bounds

    def key_tiles(
        self, source_schema: str, source_table: str, keys: Sequence[str], n: int
    ) -> Sequence[KeyBound]:
        """First keys of tiles 2..n, as server-made text (a tuple for a composite key)."""
        columns = self.key_columns(source_schema, source_table, keys)
        rows = self._rows(
            tsql_snapshot.key_tiles(source_schema, source_table, columns, n),
            source_schema,
            source_table,
        )
        return [_key_of([row], len(keys)) for row in rows]

    def key_buckets(
        self, source_schema: str, source_table: str, key: str, n: int, lo: int, hi: int
    ) -> Sequence[tuple[int, int, int]]:
        """`[lo, hi)` of one integer key cut into `n` intervals of equal width (the first
        `(hi - lo) mod n` one wider), each with its row count."""
        [column] = self.key_columns(source_schema, source_table, [key])
        buckets = tsql_chunks.Buckets(lo, hi, n)
        edges = tsql_chunks.bucket_edges(buckets)
        if hi <= lo:
            return [(a, b, 0) for a, b in edges]
        statement = tsql_chunks.key_buckets(source_schema, source_table, column, buckets)
        counts = {
            int(r["bucket"]): int(r["row_count"])
            for r in self._rows(statement, source_schema, source_table)
        }
        return [(a, b, counts.get(j, 0)) for j, (a, b) in enumerate(edges)]

    def key_at(
        self,
        source_schema: str,
        source_table: str,
        keys: Sequence[str],
        start: KeyBound,
        *,
        inclusive: bool,
        position: int,
        upto: KeyBound = None,
    ) -> KeyBound:
        """The key at 0-based `position` among keys at or after `start` (after it when not
        `inclusive`) and at or below `upto` when given, compared by the server, as
        server-made text; None when there are not that many."""
        columns = self.key_columns(source_schema, source_table, keys)
        statement = tsql_chunks.key_at(
            source_schema,
            source_table,
            columns,
            start,
            inclusive=inclusive,
            position=position,
            upto=upto,
        )
        return _key_of(self._rows(statement, source_schema, source_table), len(keys))

    def key_max(self, source_schema: str, source_table: str, keys: Sequence[str]) -> KeyBound:
        """The highest key in key order as server-made text; None for an empty table."""
        columns = self.key_columns(source_schema, source_table, keys)
        return _key_of(
            self._rows(
                tsql_chunks.key_max(source_schema, source_table, columns),
                source_schema,
                source_table,
            ),
            len(keys),
        )

    def keyset_bounds(
        self,
        source_schema: str,
        source_table: str,
        keys: Sequence[str],
        every: int,
        upto: KeyBound,
    ) -> list[KeyBound]:
        """The keys at 0-based positions `every, 2 * every, ...` in key order that are at or
        below `upto`, as server-made text.

        Each is one seek: the key `every` places after the previous bound among keys <= upto.
        The server compares, so collations and binary keys order as SQL Server orders them.
        """
        bounds: list[KeyBound] = []
        while True:
            found = self.key_at(
                source_schema,
                source_table,
                keys,
                bounds[-1] if bounds else None,
                inclusive=True,
                position=every,
                upto=upto,
            )
            if found is None:
                return bounds
            bounds.append(found)

    def row_count(self, source_schema: str, source_table: str) -> int | None:
        """The table's row count from metadata; None when the server does not say."""
        value = self._session.scalar(tsql_chunks.row_count(source_schema, source_table))
        return None if value is None else int(value)

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
        """Yield the rows with `lo <= key < hi` as batches of `columns` (declared types)."""
        key_columns = self.key_columns(source_schema, source_table, keys)
        statement = tsql_snapshot.table_rows(
            source_schema, source_table, columns, key_columns, lo, hi
        )
        schema = table_schema(columns)
        self._prepare()
        with self._errors(source_schema, source_table):
            cursor = self._session.execute(statement)
        try:
            with self._errors(source_schema, source_table):
                yield from fetch_batches(
                    cursor,
                    arrow=self._session.arrow,
                    schema=schema,
                    constants={},
                    batch_rows=batch_rows,
                )
        finally:
            cursor.close()

    def close(self) -> None:
        self._session.close()


def _key_of(rows: Sequence[dict[str, Any]], width: int) -> KeyBound:
    """The key of the first row's `k0..` columns (a tuple for a composite key); None without
    a row."""
    if not rows:
        return None
    parts = tuple(None if rows[0][f"k{i}"] is None else str(rows[0][f"k{i}"]) for i in range(width))
    return parts[0] if width == 1 else parts
