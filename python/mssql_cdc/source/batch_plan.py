"""Planning one micro-batch: `partitions(start, end)`, its steps in a fixed order.

Cut at S, driver guard (and skips with failOnDataLoss=false), schema checks, then and only then
the batch's event files, then the ranges. Deterministic: the same (start, end) on the same
server state gives the same ranges and file names, so a replay rewrites rather than adds.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from mssql_cdc.core import (
    MIN_ROWS_PER_RANGE,
    EventRecord,
    LsnRange,
    Piece,
    StreamOffset,
    Tile,
    TileSource,
    batch_ranges,
    format_commit_ts,
    lsn,
    write_json_atomic,
)
from mssql_cdc.errors import SchemaChangedError
from mssql_cdc.options import SourceConfig, open_folder
from mssql_cdc.source.loss_guards import (
    data_skipped_event,
    driver_loss_error,
    piece_is_purged,
    skip_piece,
    skip_warning,
)
from mssql_cdc.source.range_reader import range_refusal
from mssql_cdc.source.table_schema import ResolvedTable, null_columns
from mssql_cdc.source.type_rules import (
    check_captured_types,
    policy_fail_error,
    schema_change_event,
    schema_changed_error,
    switch_event,
    switch_type_error,
)
from mssql_cdc.sqlserver import ReadColumn, permission_error, pieces

if TYPE_CHECKING:
    from mssql_cdc.sqlserver import Backend

__all__ = ["plan_batch", "planned_batch"]

_log = logging.getLogger("mssql_cdc.source.formats")


def plan_batch(
    backend: Backend,
    config: SourceConfig,
    table: ResolvedTable,
    columns: Sequence[ReadColumn],
    start: StreamOffset,
    end: StreamOffset,
    *,
    time_zone: str,
    num_partitions: int,
    min_rows: int = MIN_ROWS_PER_RANGE,
) -> list[LsnRange]:
    """The ranges of the batch `(start, end]`: `planned_batch` without its events' names."""
    ranges, _ = planned_batch(
        backend,
        config,
        table,
        columns,
        start,
        end,
        time_zone=time_zone,
        num_partitions=num_partitions,
        min_rows=min_rows,
    )
    return ranges


def planned_batch(
    backend: Backend,
    config: SourceConfig,
    table: ResolvedTable,
    columns: Sequence[ReadColumn],
    start: StreamOffset,
    end: StreamOffset,
    *,
    time_zone: str,
    num_partitions: int,
    min_rows: int = MIN_ROWS_PER_RANGE,
) -> tuple[list[LsnRange], tuple[str, ...]]:
    """The ranges of the batch `(start, end]`, after its guards, checks and event files, and
    the names of the events it recorded in those files (in the order written).

    Raises:
        DataLossError: with failOnDataLoss=true, a piece's changes were purged.
        PermissionError: the login may not read a change table the batch needs.
        SchemaChangedError: DDL in the batch the declared schema cannot pass, or a newer
            instance captures columns the query's schema lacks.
    """
    planner = backend.planner

    def commit_ts(at: str) -> str | None:
        return format_commit_ts(planner.commit_time(lsn.Lsn(at), time_zone)) or None

    events: list[EventRecord] = []
    kept: list[Piece] = []
    for piece in pieces(lsn.increment(start.lsn), end.lsn, table.instances):
        found = planner.min_lsn(piece.capture_instance)
        if found is None or not piece_is_purged(piece.from_lsn, found):
            kept.append(piece)  # NULL min_lsn: not established, nothing purged yet
            continue
        m = found
        if config.fail_on_data_loss:
            raise driver_loss_error(
                piece.capture_instance,
                piece.from_lsn,
                m,
                min_commit_ts=commit_ts(m),
                lost_from_ts=start.commit_ts,
                disabled_instance=table.followed_from,
            )
        skip = skip_piece(piece, m)
        if skip is None:
            continue
        _log.warning(
            "%s", skip_warning(piece.capture_instance, skip.from_lsn, skip.min_lsn, commit_ts(m))
        )
        events.append(
            data_skipped_event(
                piece.capture_instance,
                skip.from_lsn,
                skip.min_lsn,
                min_commit_ts=commit_ts(m),
                lost_from_ts=start.commit_ts,
                batch_start_lsn=start.lsn,
                batch_end_lsn=end.lsn,
            )
        )
        if skip.piece is not None:
            kept.append(skip.piece)
    events = _schema_events(backend, config, table, columns, start, end, commit_ts) + events
    for name in sorted({p.capture_instance for p in kept}):
        if not backend.catalog.change_table_access(name).can_select:
            raise permission_error(name)
    if config.metrics_path is not None:
        for record in events:
            folder = open_folder(config.metrics_path, config.store)
            write_json_atomic(config.metrics_path, record.file_name, record.to_json(), folder)
    nulls = {i.name: null_columns(columns, i) for i in table.instances}
    ranges = batch_ranges(
        _TilesOrWhole(planner),
        kept,
        start=start,
        end=end,
        num_partitions=num_partitions,
        time_zone=time_zone,
        null_columns=nulls,
        min_rows=min_rows,
    )
    return ranges, tuple(record.event for record in events)


def _schema_events(
    backend: Backend,
    config: SourceConfig,
    table: ResolvedTable,
    columns: Sequence[ReadColumn],
    start: StreamOffset,
    end: StreamOffset,
    commit_ts: Callable[[str], str | None],
) -> list[EventRecord]:
    """DDL inside the batch and the switch to a newer instance, checked in full before any file
    is written (docs/source.md, 'Capture instances')."""
    catalog = backend.catalog
    declared = {c.name: c.spark_type for c in columns}
    events: list[EventRecord] = []
    for instance in table.instances:
        for entry in catalog.ddl_history(instance.name, start.lsn, end.lsn):
            if config.schema_change_policy == "fail":
                raise policy_fail_error(instance.name, entry.ddl_lsn, entry.ddl_command)
            captured = [(c.name, c.type_text) for c in catalog.captured_columns(instance.name)]
            for check in check_captured_types(declared, captured):
                if not check.fits:
                    raise schema_changed_error(instance.name, check, None, entry.ddl_lsn)
            _log.warning(
                "capture instance '%s': DDL at %s inside this batch: %s",
                instance.name,
                entry.ddl_lsn,
                entry.ddl_command,
            )
            events.append(
                schema_change_event(
                    instance.name,
                    entry.ddl_lsn,
                    commit_ts(entry.ddl_lsn),
                    entry.ddl_command,
                    batch_start_lsn=start.lsn,
                    batch_end_lsn=end.lsn,
                )
            )
    if len(table.instances) == 2:
        older, newer = table.instances
        switch = newer.start_lsn
        if switch is not None and start.lsn < switch <= end.lsn:
            names = {c.name.lower() for c in columns}
            missing = [c for c in newer.captured_columns if c.lower() not in names]
            if missing and config.columns is None:
                raise SchemaChangedError(
                    f"capture instance '{newer.name}' captures columns this query's schema "
                    f"lacks ({', '.join(missing)}); restart the query so the schema is "
                    "inferred again (the restart replays this batch)",
                    newer.name,
                )
            captured = [
                (c.name, c.type_text)
                for c in catalog.captured_columns(newer.name)
                if not c.is_computed
            ]
            for check in check_captured_types(declared, captured):
                if not check.fits:
                    raise switch_type_error(
                        older.name,
                        newer.name,
                        switch,
                        check,
                        declared_by_option=config.columns is not None,
                    )
            uncaptured = null_columns(columns, newer)
            if uncaptured:
                _log.warning(
                    "capture instance '%s' does not capture %s; they read NULL from %s",
                    newer.name,
                    ", ".join(uncaptured),
                    switch,
                )
            events.append(
                switch_event(
                    older.name,
                    newer.name,
                    switch,
                    commit_ts(switch),
                    uncaptured,
                    batch_start_lsn=start.lsn,
                    batch_end_lsn=end.lsn,
                )
            )
    return events


class _TilesOrWhole:
    """The planner's tiles, or none when the server refuses the tile query as purged (313) or
    vanished (208): a cleanup or disable that commits between the guard above and the tiling.
    Without tiles the piece is one range, and its read meets the same refusal in a task, where
    the executor guard decides by failOnDataLoss as for a cleanup during the read."""

    def __init__(self, tiles: TileSource) -> None:
        self._tiles = tiles

    def split_points(
        self, capture_instance: str, from_lsn: lsn.Lsn, to_lsn: lsn.Lsn, n: int
    ) -> Sequence[Tile]:
        try:
            return self._tiles.split_points(capture_instance, from_lsn, to_lsn, n)
        except Exception as exc:  # only a refused range is planned whole; the rest re-raise
            if range_refusal(exc) is None:
                raise
            _log.info(
                "capture instance %r: the server refused tiling %s-%s (error %d); the piece is "
                "read as one range",
                capture_instance, from_lsn, to_lsn, range_refusal(exc),
            )  # fmt: skip
            return []
