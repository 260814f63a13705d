"""The emulator backend: StreamPlanner, CaptureCatalog and ChangeRangeReader over EmulatorReader.

The emulator reads in process and hands Arrow over the C Data Interface; no T-SQL is involved.
Its reader returns server-local times, converted here to naive UTC through `zoneinfo`, as the
T-SQL backends convert on the server; a time a fall-back repeats takes the instant the mapping's
LSN order gives it (`commit_instants`, decision 1320). The object pickles as its file path and
opens the file lazily in the process that uses it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from mssql_cdc.core import Tile, lsn
from mssql_cdc.emulator import EmulatorReader, PermissionDeniedError, UnknownObjectError
from mssql_cdc.sqlserver.commit_instants import Candidates, chain
from mssql_cdc.sqlserver.emulated.local_time import (
    local_candidates,
    local_candidates_array,
    text_scales,
    times_as_text,
    zone_of,
)
from mssql_cdc.sqlserver.metadata import (
    CapturedColumn,
    CaptureInstance,
    ChangeTableAccess,
    DdlEntry,
    ReadColumn,
    SessionStats,
)
from mssql_cdc.sqlserver.tsql.arrow import MAX_BATCH_BYTES, cast_batches, change_shape
from mssql_cdc.sqlserver.tsql.backend import permission_error

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["EmulatorBackend", "split_table_name"]


def split_table_name(table: str) -> tuple[str, str]:
    """`schema.table` as the emulator names tables, split; a bare name is in `dbo`."""
    schema, dot, name = table.partition(".")
    return (schema, name) if dot else ("dbo", schema)


def _base_type(type_text: str) -> str:
    return type_text.split("(", 1)[0].strip().lower()


class EmulatorBackend:
    """Every change-source Protocol over one emulator file (`emulatorPath`).

    Satisfies StreamPlanner, CaptureCatalog and ChangeRangeReader structurally; the snapshot
    Protocols are `EmulatorSnapshotReader`'s.
    """

    def __init__(self, path: str, *, user: str | None = None) -> None:
        """`user`: the emulator's database user to read as (as a login would); None is dbo."""
        self._path = path
        self._user = user
        self._reader: EmulatorReader | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self._path, "user": self._user}  # never a live handle

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["path"], user=state.get("user"))  # type: ignore[misc]

    @property
    def reader(self) -> EmulatorReader:
        if self._reader is None:
            self._reader = EmulatorReader(self._path, user=self._user)
        return self._reader

    def max_lsn(self) -> lsn.Lsn | None:
        value = self.reader.max_lsn()
        return None if value is None else lsn.Lsn(value)

    def min_lsn(self, capture_instance: str) -> lsn.Lsn | None:
        """Zeros for an unknown or dropped instance, None until capture reaches it."""
        value = self.reader.min_lsn(capture_instance)
        return None if value is None else lsn.Lsn(value)

    def commit_time(self, at: lsn.Lsn, time_zone: str) -> datetime | None:
        """UTC time of the mapping entry equal to `at`, else of the newest entry below it."""
        local = self.reader.time_at_or_below(at)
        if local is None:
            return None
        earliest, latest = local_candidates(local, time_zone)
        if earliest == latest:
            return earliest
        known = self._instants(time_zone)
        below = [at_lsn for at_lsn in known if at_lsn <= at]
        return known[max(below)] if below else earliest

    def _instants(self, time_zone: str) -> dict[lsn.Lsn, datetime]:
        """Every mapping entry's instant, chained in LSN order (read only when a time is
        repeated, so at most around a fall-back)."""
        entries = [
            Candidates(lsn.Lsn(at), *local_candidates(local, time_zone))
            for at, local in self.reader.commit_times()
        ]
        return dict(zip((lsn.normalize(e.lsn) for e in entries), chain(entries, None), strict=True))

    def nth_commit_after(self, after: lsn.Lsn, n: int) -> lsn.Lsn | None:
        value = self.reader.nth_commit_after(after, n)
        return None if value is None else lsn.Lsn(value)

    def split_points(
        self, capture_instance: str, from_lsn: lsn.Lsn, to_lsn: lsn.Lsn, n: int
    ) -> Sequence[Tile]:
        points = self.reader.split_points(capture_instance, from_lsn, to_lsn, n)
        return [Tile(lsn.Lsn(last), int(rows)) for last, rows in points]

    def capture_instances(
        self, source_schema: str | None = None, source_table: str | None = None
    ) -> Sequence[CaptureInstance]:
        """The instances of one table, or of every table when no table is named."""
        if source_table is not None:
            tables = [f"{source_schema or 'dbo'}.{source_table}"]
        else:
            tables = list(self.reader.tables())
        found: list[CaptureInstance] = []
        for table in tables:
            schema, name = split_table_name(table)
            for info in self.reader.capture_instances(table):
                captured = tuple(c["name"] for c in self.reader.captured_columns(info["name"]))
                start = info.get("start_lsn")
                found.append(
                    CaptureInstance(
                        name=str(info["name"]),
                        source_schema=schema,
                        source_table=name,
                        start_lsn=None if start is None else lsn.Lsn(str(start)),
                        create_date=info.get("create_date"),
                        index_columns=tuple(info.get("index_columns") or ()),
                        captured_columns=captured,
                    )
                )
        return found

    def instance_table(self, capture_instance: str) -> tuple[str, str] | None:
        """The instance's table, looked up by its exact name; None when there is none."""
        try:
            info = self.reader.resolve_instance(capture_instance)
        except UnknownObjectError:
            return None
        return split_table_name(str(info["table"]))

    def captured_columns(self, capture_instance: str) -> Sequence[CapturedColumn]:
        return [
            CapturedColumn(
                name=str(c["name"]),
                ordinal=int(c["ordinal"]),
                column_id=int(c["column_id"]) if c.get("present", True) else None,
                sql_type=_base_type(str(c["sql_type"])),
                type_text=str(c["sql_type"]),
                is_computed=bool(c.get("is_computed", False)),
            )
            for c in self.reader.captured_columns(capture_instance)
        ]

    def ddl_history(
        self, capture_instance: str, after: lsn.Lsn, upto: lsn.Lsn
    ) -> Sequence[DdlEntry]:
        return [
            DdlEntry(
                ddl_lsn=lsn.Lsn(str(e["ddl_lsn"])),
                ddl_time=e.get("ddl_time"),
                ddl_command=str(e["ddl_command"]),
                required_column_update=bool(e.get("required_column_update")),
            )
            for e in self.reader.ddl_history(capture_instance, after, upto)
        ]

    def change_table_access(self, capture_instance: str) -> ChangeTableAccess:
        info = self.reader.resolve_instance(capture_instance)
        return ChangeTableAccess(
            can_select=self.reader.may_read(capture_instance),
            has_command_id=bool(info["has_command_id"]),
        )

    def resolve_time_zone(self, setting: str) -> str:
        """`auto`: the emulator's IANA zone; `UTC`; else a zone zoneinfo knows.

        Raises:
            ConfigError: `setting` is no zone zoneinfo knows.
        """
        if setting.lower() == "auto":
            return self.reader.server_time_zone()
        if setting.upper() == "UTC":
            return "UTC"
        zone_of(setting)  # raises ConfigError naming sourceTimeZone
        return setting

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
        """Yield the range's change rows in the output schema (docs/source.md, 'Rows').

        The first batch holds at most 64 rows, later ones at most `batch_rows` and 64 MiB.

        Raises:
            UnknownObjectError (208) or InvalidRangeError (313) from the emulator.
            PermissionError: the user may not read the instance (error 229).
        """
        import pyarrow as pa

        shape = change_shape(
            capture_instance,
            columns,
            include_command_id=include_command_id,
            null_columns=null_columns,
        )
        try:
            declared = [c for c in shape.read if c.spark_type == "STRING"]
            types = (
                {c.name: c.type_text for c in self.captured_columns(capture_instance)}
                if declared
                else {}
            )
            stream = self.reader.read_changes(
                capture_instance,
                from_lsn,
                to_lsn,
                columns=[c.name for c in shape.read],
                include_command_id=include_command_id,
                batch_rows=batch_rows,
                batch_bytes=MAX_BATCH_BYTES,
                text_columns=list(text_scales(declared, types)),
            )
        except PermissionDeniedError as exc:  # 229, said as the T-SQL backends say it
            raise permission_error(capture_instance, self._user or "<user>") from exc

        known: dict[lsn.Lsn, datetime] = {}

        def as_read(raw: pa.RecordBatch) -> pa.RecordBatch:
            # The native reader returns local commit times; the output holds UTC.
            position = raw.schema.get_field_index("_commit_ts")
            if position >= 0:
                utc, latest = local_candidates_array(raw.column(position), time_zone)
                if utc != latest:  # a repeated local time: its instant from LSN order
                    if not known:
                        known.update(self._instants(time_zone))
                    starts = raw.column(raw.schema.get_field_index("_start_lsn")).to_pylist()
                    pairs = zip(starts, utc.to_pylist(), strict=True)
                    utc = pa.array(
                        [known.get(lsn.normalize(str(s)), e) for s, e in pairs],
                        type=pa.timestamp("us"),
                    )
                raw = raw.set_column(position, pa.field("_commit_ts", utc.type), utc)
            return times_as_text(raw)

        yield from cast_batches((as_read(raw) for raw in stream), shape.schema, shape.constants)

    def session_stats(self) -> SessionStats:
        return SessionStats(rtt_ms=0.0, network_wait_ms=None)  # in process: no network

    def close(self) -> None:
        self._reader = None  # the native handle closes with its last reference
