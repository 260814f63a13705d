"""What the recovery reads of the source: max_lsn, the table's capture instances, commit times.

Every purge test of the recovery reads these afresh, max_lsn first and the instances only when
there is a range to test (decision 0500). `SourceObserver` is the recovery's own narrow
Protocol at the SQL Server seam; `open_observer(config)` serves it from the configured
backend's Protocol views. Each read runs through the driver-side retries: a transient error
(a connection the server closed, a server restarting) drops the connection and the read runs
again on a new one, as the stream's own driver reads do (decision 1405). LSNs are canonical
text, commit times UTC text `YYYY-MM-DDTHH:MM:SS.mmm`, None when unknown.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

from mssql_cdc.core import Instance, format_commit_ts, lsn
from mssql_cdc.options import SourceConfig
from mssql_cdc.sqlserver import (
    Backend,
    CaptureInstance,
    Reconnecting,
    call_with_retries,
    find_instance,
    open_backend,
    table_instances,
)

__all__ = ["BackendObserver", "RetryingObserver", "SourceObserver", "open_observer"]

T = TypeVar("T")


class SourceObserver(Protocol):
    """What the recovery pre-flight needs of the source, read afresh on every call."""

    def max_lsn(self) -> str | None: ...
    def instances(self) -> tuple[Instance, ...]: ...
    def commit_ts(self, at: str) -> str | None: ...
    def row_count(self) -> int | None: ...
    def close(self) -> None: ...


def _established(value: str | None) -> str | None:
    return None if value is None or value == lsn.ZERO else value


class BackendObserver:
    """SourceObserver over one backend (the emulator file or a T-SQL session)."""

    def __init__(self, backend: Backend, config: SourceConfig) -> None:
        self._backend = backend
        self._configured = config.capture_instance
        self._zone_setting = config.source_time_zone
        self._zone: str | None = None

    def _resolved(self) -> tuple[CaptureInstance, list[CaptureInstance]]:
        catalog = self._backend.catalog
        configured = find_instance(catalog, self._configured).instance
        same = catalog.capture_instances(configured.source_schema, configured.source_table)
        return configured, table_instances(same)

    def max_lsn(self) -> str | None:
        return self._backend.planner.max_lsn()

    def instances(self) -> tuple[Instance, ...]:
        found: list[Instance] = []
        for info in self._resolved()[1]:
            low = _established(self._backend.planner.min_lsn(info.name))
            found.append(
                Instance(
                    name=info.name,
                    start_lsn=str(info.start_lsn),
                    min_lsn=low,
                    min_commit_ts=self.commit_ts(low) if low else None,
                )
            )
        return tuple(found)

    def commit_ts(self, at: str) -> str | None:
        if self._zone is None:
            self._zone = self._backend.catalog.resolve_time_zone(self._zone_setting)
        moment = self._backend.planner.commit_time(lsn.Lsn(at), self._zone)
        return format_commit_ts(moment) or None

    def row_count(self) -> int | None:
        configured = self._resolved()[0]
        return self._backend.chunks.row_count(configured.source_schema, configured.source_table)

    def close(self) -> None:
        self._backend.close()


class RetryingObserver:
    """SourceObserver whose reads retry transient errors on a new connection: every read is
    read afresh and writes nothing, so running it again is safe."""

    def __init__(self, config: SourceConfig) -> None:
        self._slot: Reconnecting[BackendObserver] = Reconnecting(
            lambda: BackendObserver(open_backend(config), config), lambda o: o.close()
        )

    def connect(self) -> None:
        """Open the first connection now, without a retry: a server that cannot be reached,
        a refused login or a bad setting is raised here, at once."""
        self._slot.get()

    def _read(self, method: str, read: Callable[[BackendObserver], T]) -> T:
        return call_with_retries(f"pre-flight {method}", self._slot, read)

    def max_lsn(self) -> str | None:
        return self._read("max_lsn", lambda o: o.max_lsn())

    def instances(self) -> tuple[Instance, ...]:
        return self._read("instances", lambda o: o.instances())

    def commit_ts(self, at: str) -> str | None:
        return self._read("commit_ts", lambda o: o.commit_ts(at))

    def row_count(self) -> int | None:
        return self._read("row_count", lambda o: o.row_count())

    def close(self) -> None:
        self._slot.drop()


def open_observer(config: SourceConfig) -> SourceObserver:
    """The observer of the configured backend; the caller closes it. The first connection
    opens here and is not retried (an unreachable server is raised at once); the reads after
    it retry transient errors on a new connection.

    Raises:
        ImportError: the driver package is not installed (the message names it).
        ConfigError: the connection settings are unusable.
    """
    observer = RetryingObserver(config)
    observer.connect()
    return observer
