"""What snapshots ask the source on the driver: the stamp, the loss observation, commit times
and the key planning of chunked snapshots (docs/snapshots.md).

`open_probe(config)` picks the backend: the emulator file, or a T-SQL session through the
`sqlserver` Protocols. Every call reads the source afresh. A T-SQL probe's calls retry a
transient error on a new session, as the pre-flight's do (decision 1405): a snapshot holds its
probe while it waits for a slot and while Spark reads, long enough for a server to restart.
The emulator's chunk bounds are ordered by its engine, never by Python (decision 1331).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, closing
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol, TypeVar

from mssql_cdc.core import (
    Instance,
    Observation,
    StreamOffset,
    format_commit_ts,
    initial_lsn,
    lsn,
    typed_part,
)
from mssql_cdc.options import KeyBound, SourceConfig

__all__ = ["ResolvedSource", "SourceProbe", "open_probe", "stamp"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ResolvedSource:
    """The capture instance the stream reads and its table."""

    capture_instance: str
    source_schema: str
    source_table: str
    start_lsn: lsn.Lsn | None
    index_columns: tuple[str, ...]

    @property
    def table(self) -> str:
        return f"{self.source_schema}.{self.source_table}"


class SourceProbe(Protocol):
    """The driver-side questions of snapshots and `backfill()`, over one backend."""

    def resolved(self) -> ResolvedSource: ...
    def observe(self) -> Observation: ...
    def commit_ts(self, at: str) -> str | None: ...
    def nth_entry_after(self, after: str, n: int) -> str | None: ...
    def column_types(self) -> dict[str, str]: ...
    def int_extent(self, key: str) -> tuple[int, int] | None: ...
    def row_count(self) -> int | None: ...
    def buckets(self, key: str, n: int, lo: int, hi: int) -> Sequence[tuple[int, int, int]]: ...
    def keyset_max(self, keys: Sequence[str]) -> KeyBound: ...
    def keyset_bounds(self, keys: Sequence[str], every: int, upto: KeyBound) -> list[KeyBound]: ...
    def first_key_above(self, keys: Sequence[str], bound: KeyBound) -> KeyBound: ...
    def close(self) -> None: ...


def stamp(probe: SourceProbe) -> StreamOffset:
    """The stamp rule: `max_lsn`, or just below a just-enabled instance's start LSN.

    Raises:
        ValueError: neither is known yet (retry once the capture job has run).
    """
    resolved = probe.resolved()
    observation = probe.observe()
    at = initial_lsn(
        "latest",
        capture_instance=resolved.capture_instance,
        max_lsn=None if observation.max_lsn is None else lsn.Lsn(observation.max_lsn),
        oldest_min_lsn=None,
        oldest_start_lsn=None,
        start_lsn=resolved.start_lsn,
    )
    return StreamOffset(at, probe.commit_ts(at))


def _bound(value: object) -> KeyBound:
    if isinstance(value, list | tuple):
        return tuple(value)
    return value  # type: ignore[return-value]


class _EmulatorProbe:
    def __init__(self, config: SourceConfig) -> None:
        from mssql_cdc.emulator import EmulatorReader

        assert config.emulator_path is not None  # config guarantees it with the emulator backend
        self._path = config.emulator_path
        # The key reads run at the source's isolationLevel and lockTimeoutMs, as over TDS.
        self._reader = EmulatorReader(
            config.emulator_path,
            isolation=config.isolation_level,
            lock_timeout_ms=config.lock_timeout_ms,
        )
        self._lock_timeout_ms = config.lock_timeout_ms
        self._configured = config.capture_instance
        self._keys = config.snapshot_keys
        self._resolved: ResolvedSource | None = None
        self._zone = self._reader.server_time_zone()

    def resolved(self) -> ResolvedSource:
        if self._resolved is None:
            from mssql_cdc.sqlserver import EmulatorBackend, find_instance

            # The rule the stream resolves by (a disabled instance followed to its table's
            # remaining one), not the emulator's exact lookup: recovery must find the
            # instance the stream reads.
            with closing(EmulatorBackend(self._path)) as catalog:
                found = find_instance(catalog, self._configured).instance
            self._resolved = ResolvedSource(
                capture_instance=found.name,
                source_schema=found.source_schema,
                source_table=found.source_table,
                start_lsn=found.start_lsn,
                index_columns=tuple(self._keys or found.index_columns),
            )
        return self._resolved

    def observe(self) -> Observation:
        table = self.resolved().table
        with self._reader.snapshot():
            instances = []
            for found in self._reader.capture_instances(table):
                if found["start_lsn"] is None:
                    continue  # not established yet, as the T-SQL probe skips it
                name = str(found["name"])
                low = self._reader.min_lsn(name)
                low_ts = self.commit_ts(lsn.Lsn(low)) if low and low != lsn.ZERO else None
                instances.append(Instance(name, str(found["start_lsn"]), low, low_ts))
            return Observation(self._reader.max_lsn(), tuple(instances))

    def commit_ts(self, at: str) -> str | None:
        """The commit time of exactly that entry, as the stream gives it: a local time that a
        fall-back repeats takes the instant LSN order gives it."""
        if self._reader.lsn_to_time(at) is None:
            return None
        from mssql_cdc.sqlserver import EmulatorBackend

        with closing(EmulatorBackend(self._path)) as backend:
            return format_commit_ts(backend.commit_time(lsn.Lsn(at), self._zone)) or None

    def nth_entry_after(self, after: str, n: int) -> str | None:
        """The n-th cdc.lsn_time_mapping entry above `after`, or None."""
        found: str | None = self._reader.nth_commit_after(after, n)
        return None if found is None else lsn.normalize(found)

    def column_types(self) -> dict[str, str]:
        info = self._reader.table_info(self.resolved().table)
        return {str(c["name"]): str(c["sql_type"]).lower() for c in info["columns"]}

    def _errors(self) -> AbstractContextManager[None]:
        """Errors 3952 and 1222 of a key read as ConfigError and LockTimeoutError."""
        from mssql_cdc.sqlserver import source_read_errors

        r = self.resolved()
        return source_read_errors(
            table=f"[{r.source_schema}].[{r.source_table}]",
            lock_timeout_ms=self._lock_timeout_ms,
            database=Path(self._path).stem,
        )

    def int_extent(self, key: str) -> tuple[int, int] | None:
        with self._errors():
            extent = self._reader.key_extent(self.resolved().table, key_columns=[key])
        return None if extent is None else (int(extent["min"]), int(extent["max"]))

    def row_count(self) -> int | None:
        return int(self._reader.table_info(self.resolved().table)["row_count"])

    def buckets(self, key: str, n: int, lo: int, hi: int) -> Sequence[tuple[int, int, int]]:
        with self._errors():
            return self._reader.key_buckets(self.resolved().table, n, lo, hi, key_columns=[key])

    def keyset_max(self, keys: Sequence[str]) -> KeyBound:
        with self._errors():
            extent = self._reader.key_extent(self.resolved().table, key_columns=list(keys))
        return None if extent is None else _bound(extent["max"])

    def _typed(self, keys: Sequence[str], bound: KeyBound) -> object:
        """A bound as the engine takes it: the plan stores dates and times as text."""
        if bound is None:
            return None
        types = {name.lower(): t for name, t in self.column_types().items()}
        parts = bound if isinstance(bound, tuple) else (bound,)
        typed = [typed_part(p, types.get(k.lower())) for p, k in zip(parts, keys, strict=True)]
        return tuple(typed) if isinstance(bound, tuple) else typed[0]

    def keyset_bounds(self, keys: Sequence[str], every: int, upto: KeyBound) -> list[KeyBound]:
        """The tile starts at or below `upto`, as the engine orders keys:
        the starts come in key order, and a start is at or below `upto` exactly when a key
        lies in `[start, first key above upto)`; a binary search asks that of the engine."""
        table = self.resolved().table
        with self._errors():
            tiles = [
                _bound(t)
                for t in self._reader.key_tiles(table, rows_per_tile=every, key_columns=list(keys))
            ]
            above = self._reader.next_key(table, self._typed(keys, upto), key_columns=list(keys))
        if above is None:
            return tiles

        def at_or_below(start: KeyBound) -> bool:
            with self._errors():
                batches = self._reader.read_table(
                    table, start, above, columns=list(keys), key_columns=list(keys), batch_rows=1
                )
                return any(b.num_rows for b in batches)

        low, high = 0, len(tiles)  # tiles[:low] are at or below upto, tiles[high:] above
        while low < high:
            middle = (low + high) // 2
            if at_or_below(tiles[middle]):
                low = middle + 1
            else:
                high = middle
        return tiles[:low]

    def first_key_above(self, keys: Sequence[str], bound: KeyBound) -> KeyBound:
        with self._errors():
            found = self._reader.next_key(
                self.resolved().table, self._typed(keys, bound), key_columns=list(keys)
            )
        return None if found is None else _bound(found)

    def close(self) -> None:
        """Nothing to close: each emulator read is its own transaction."""


class _TsqlProbe:
    def __init__(self, config: SourceConfig) -> None:
        from mssql_cdc.sqlserver import (
            TsqlCaptureCatalog,
            TsqlSnapshotReader,
            TsqlStreamPlanner,
            connect,
            find_instance,
        )

        session = connect(config)
        self._planner = TsqlStreamPlanner(session)
        self._catalog = TsqlCaptureCatalog(session)
        self._chunks = TsqlSnapshotReader(
            session, isolation=config.isolation_level, lock_timeout_ms=config.lock_timeout_ms
        )
        found = find_instance(self._catalog, config.capture_instance).instance
        self._resolved = ResolvedSource(
            found.name,
            found.source_schema,
            found.source_table,
            found.start_lsn,
            tuple(config.snapshot_keys or found.index_columns),
        )
        self._zone = self._catalog.resolve_time_zone(config.source_time_zone)

    def resolved(self) -> ResolvedSource:
        return self._resolved

    def observe(self) -> Observation:
        r = self._resolved
        instances = []
        for found in self._catalog.capture_instances(r.source_schema, r.source_table):
            if found.start_lsn is None:
                continue
            low = self._planner.min_lsn(found.name)
            low_ts = self.commit_ts(low) if low and low != lsn.ZERO else None
            instances.append(Instance(found.name, found.start_lsn, low, low_ts))
        return Observation(self._planner.max_lsn(), tuple(instances))

    def commit_ts(self, at: str) -> str | None:
        moment: datetime | None = self._planner.commit_time(lsn.Lsn(at), self._zone)
        return format_commit_ts(moment) or None

    def nth_entry_after(self, after: str, n: int) -> str | None:
        """The n-th cdc.lsn_time_mapping entry above `after`, or None."""
        found = self._planner.nth_commit_after(lsn.Lsn(after), n)
        return None if found is None else lsn.normalize(found)

    def column_types(self) -> dict[str, str]:
        r = self._resolved
        return {
            c.name: c.sql_type for c in self._chunks.table_columns(r.source_schema, r.source_table)
        }

    def int_extent(self, key: str) -> tuple[int, int] | None:
        r = self._resolved
        return self._chunks.key_extent(r.source_schema, r.source_table, key)

    def row_count(self) -> int | None:
        return self._chunks.row_count(self._resolved.source_schema, self._resolved.source_table)

    def buckets(self, key: str, n: int, lo: int, hi: int) -> Sequence[tuple[int, int, int]]:
        r = self._resolved
        return self._chunks.key_buckets(r.source_schema, r.source_table, key, n, lo, hi)

    def keyset_max(self, keys: Sequence[str]) -> KeyBound:
        r = self._resolved
        return self._chunks.key_max(r.source_schema, r.source_table, keys)

    def keyset_bounds(self, keys: Sequence[str], every: int, upto: KeyBound) -> list[KeyBound]:
        r = self._resolved
        return self._chunks.keyset_bounds(r.source_schema, r.source_table, keys, every, upto)

    def first_key_above(self, keys: Sequence[str], bound: KeyBound) -> KeyBound:
        r = self._resolved
        return self._chunks.key_at(
            r.source_schema, r.source_table, keys, bound, inclusive=False, position=0
        )

    def close(self) -> None:
        self._planner.close()


class _RetryingProbe:
    """A T-SQL probe whose calls, all reads, retry transient errors on a new session. Its
    first session opens here without a retry: an unreachable server is raised at once."""

    def __init__(self, config: SourceConfig) -> None:
        from mssql_cdc.sqlserver import Reconnecting

        self._slot: Reconnecting[_TsqlProbe] = Reconnecting(
            lambda: _TsqlProbe(config), lambda p: p.close()
        )
        self._slot.get()

    def _call(self, method: str, read: Callable[[_TsqlProbe], T]) -> T:
        from mssql_cdc.sqlserver import call_with_retries

        return call_with_retries(f"snapshot probe {method}", self._slot, read)

    def resolved(self) -> ResolvedSource:
        return self._call("resolved", lambda p: p.resolved())

    def observe(self) -> Observation:
        return self._call("observe", lambda p: p.observe())

    def commit_ts(self, at: str) -> str | None:
        return self._call("commit_ts", lambda p: p.commit_ts(at))

    def nth_entry_after(self, after: str, n: int) -> str | None:
        return self._call("nth_entry_after", lambda p: p.nth_entry_after(after, n))

    def column_types(self) -> dict[str, str]:
        return self._call("column_types", lambda p: p.column_types())

    def int_extent(self, key: str) -> tuple[int, int] | None:
        return self._call("int_extent", lambda p: p.int_extent(key))

    def row_count(self) -> int | None:
        return self._call("row_count", lambda p: p.row_count())

    def buckets(self, key: str, n: int, lo: int, hi: int) -> Sequence[tuple[int, int, int]]:
        return self._call("buckets", lambda p: p.buckets(key, n, lo, hi))

    def keyset_max(self, keys: Sequence[str]) -> KeyBound:
        return self._call("keyset_max", lambda p: p.keyset_max(keys))

    def keyset_bounds(self, keys: Sequence[str], every: int, upto: KeyBound) -> list[KeyBound]:
        return self._call("keyset_bounds", lambda p: p.keyset_bounds(keys, every, upto))

    def first_key_above(self, keys: Sequence[str], bound: KeyBound) -> KeyBound:
        return self._call("first_key_above", lambda p: p.first_key_above(keys, bound))

    def close(self) -> None:
        self._slot.drop()


def open_probe(config: SourceConfig) -> SourceProbe:
    """The probe of the configured backend; the caller closes it."""
    if config.backend == "emulator":
        return _EmulatorProbe(config)
    return _RetryingProbe(config)
