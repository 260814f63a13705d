"""What the recovery reads of the source: max_lsn, the table's capture instances, commit times.

Every purge test of the recovery reads these afresh (30-snapshots-and-recovery.md section 1,
"Source observation"). `SourceObserver` is the recovery's own narrow Protocol at the SQL Server
seam; `open_observer(config)` picks the emulator or the T-SQL backend. LSNs are canonical text,
commit times UTC text `YYYY-MM-DDTHH:MM:SS.mmm`, None when unknown.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol
from zoneinfo import ZoneInfo

from mssql_cdc import lsn
from mssql_cdc.config import SourceConfig
from mssql_cdc.errors import ConfigError
from mssql_cdc.offsets import format_commit_ts
from mssql_cdc.recovery_decision import Instance

__all__ = ["EmulatorObserver", "SourceObserver", "TsqlObserver", "open_observer"]


class SourceObserver(Protocol):
    """What the recovery pre-flight needs of the source, read afresh on every call."""

    def max_lsn(self) -> str | None: ...
    def instances(self) -> tuple[Instance, ...]: ...
    def commit_ts(self, at: str) -> str | None: ...
    def row_count(self) -> int | None: ...
    def close(self) -> None: ...


def _established(value: str | None) -> str | None:
    return None if value is None or value == lsn.ZERO else value


class EmulatorObserver:
    """SourceObserver over an emulator file (the `emulator` backend)."""

    def __init__(self, path: str, capture_instance: str) -> None:
        from mssql_cdc.emulator import EmulatorReader

        self._reader = EmulatorReader(path)
        self._configured = capture_instance

    def _table(self) -> str:
        return str(self._reader.resolve_instance(self._configured)["table"])

    def max_lsn(self) -> str | None:
        return self._reader.max_lsn()

    def instances(self) -> tuple[Instance, ...]:
        found: list[Instance] = []
        with self._reader.snapshot():
            for info in self._reader.capture_instances(self._table()):
                name = str(info["name"])
                low = _established(self._reader.min_lsn(name))
                found.append(
                    Instance(
                        name=name,
                        start_lsn=str(info["start_lsn"] or info["create_lsn"]),
                        min_lsn=low,
                        min_commit_ts=self.commit_ts(low) if low else None,
                    )
                )
        return tuple(found)

    def commit_ts(self, at: str) -> str | None:
        local = self._reader.lsn_to_time(at)
        if local is None:
            return None
        zone = self._reader.server_time_zone()
        if zone.upper() != "UTC":
            local = local.replace(tzinfo=ZoneInfo(zone)).astimezone(UTC).replace(tzinfo=None)
        return format_commit_ts(local) or None

    def row_count(self) -> int | None:
        count = self._reader.table_info(self._table()).get("row_count")
        return None if count is None else int(count)

    def close(self) -> None:
        """Nothing to release: the reader caches one connection per process."""


class TsqlObserver:
    """SourceObserver over a live SQL Server session (the T-SQL backends)."""

    def __init__(self, config: SourceConfig) -> None:
        from mssql_cdc.sqlserver import TsqlCaptureCatalog, TsqlStreamPlanner, connect
        from mssql_cdc.sqlserver.snapshot_backend import TsqlSnapshotReader

        self._session = connect(config)
        self._planner = TsqlStreamPlanner(self._session)
        self._catalog = TsqlCaptureCatalog(self._session)
        self._snapshot = TsqlSnapshotReader(
            self._session,
            isolation=config.isolation_level,
            lock_timeout_ms=config.lock_timeout_ms,
        )
        self._configured = config.capture_instance
        self._zone = self._catalog.resolve_time_zone(config.source_time_zone)

    def max_lsn(self) -> str | None:
        return self._planner.max_lsn()

    def instances(self) -> tuple[Instance, ...]:
        from mssql_cdc.sqlserver.instances import resolve_instance, table_instances

        every = self._catalog.capture_instances()
        configured = resolve_instance(self._configured, every).instance
        same_table = [
            i
            for i in every
            if (i.source_schema, i.source_table)
            == (configured.source_schema, configured.source_table)
        ]
        found: list[Instance] = []
        for info in table_instances(same_table):
            low = _established(self._planner.min_lsn(info.name))
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
        moment: datetime | None = self._planner.commit_time(lsn.Lsn(at), self._zone)
        return format_commit_ts(moment) or None

    def row_count(self) -> int | None:
        from mssql_cdc.sqlserver.instances import resolve_instance

        info = resolve_instance(self._configured, self._catalog.capture_instances()).instance
        return self._snapshot.row_count(info.source_schema, info.source_table)

    def close(self) -> None:
        self._session.close()


def open_observer(config: SourceConfig) -> SourceObserver:
    """The observer of the configured backend; the caller closes it."""
    if config.backend == "emulator":
        if config.emulator_path is None:
            raise ConfigError("option emulatorPath is required with backend 'emulator'")
        return EmulatorObserver(config.emulator_path, config.capture_instance)
    return TsqlObserver(config)
