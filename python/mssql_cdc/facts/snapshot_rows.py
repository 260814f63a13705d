"""The facts rows of snapshots: opens, plans, chunks and completions.

docs/tables.md, 'Rows as values', gives each row's columns and 'Idempotency keys' its key.

All have no `batch_id`, the `app_id` and `generation` of the sink id of the generation they
belong to, the commit times of their LSNs, and NULL counters and lags.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any, Literal

from mssql_cdc.errors import InternalError
from mssql_cdc.facts.detail_payloads import (
    RequestedDetail,
    SeededDetail,
    SnapshotChunkDetail,
    SnapshotCompletionDetail,
    SnapshotOpenDetail,
    SnapshotPlanDetail,
    parse_time,
    to_json,
)
from mssql_cdc.facts.keys import sink_id
from mssql_cdc.facts.metrics import retention_headroom_hours
from mssql_cdc.facts.rows import FactsRow

__all__ = [
    "snapshot_chunk_row",
    "snapshot_completion_row",
    "snapshot_open_row",
    "snapshot_plan_row",
]


def _at_lsn(
    event: str,
    *,
    app_id: str,
    generation: int,
    target: str,
    lsn: str,
    commit_ts: datetime | None,
    rows: int | None,
    started_at: datetime | None,
    detail: Mapping[str, Any] | None,
    written_at: datetime,
) -> FactsRow:
    """The shape all snapshot rows share: min = max = end = `lsn`, with its commit time."""
    return FactsRow(
        generation=generation,
        rows=rows,
        event=event,
        min_lsn=lsn,
        max_lsn=lsn,
        end_lsn=lsn,
        min_commit_ts=commit_ts,
        max_commit_ts=commit_ts,
        end_commit_ts=commit_ts,
        started_at=started_at,
        written_at=written_at,
        target=target,
        detail=to_json(detail),
        app_id=sink_id(app_id, generation),
    )


def snapshot_completion_row(
    event: Literal["bootstrap", "resnapshot"],
    *,
    app_id: str,
    generation: int,
    target: str,
    snapshot_lsn: str,
    commit_ts: datetime | None,
    rows: int | None,
    started_at: datetime | None,
    duration_ms: int | None,
    written_at: datetime,
    lost_from_ts: datetime | None = None,
    lost_to_ts: datetime | None = None,
    detail: SnapshotCompletionDetail | RequestedDetail | SeededDetail | None = None,
) -> FactsRow:
    """A `bootstrap` (generation 0, no gap) or `resnapshot` (generation >= 1) completion row.

    Raises:
        InternalError: the event does not match the generation, or a bootstrap carries a gap.
    """
    if event == "bootstrap" and (generation != 0 or lost_from_ts or lost_to_ts):
        raise InternalError(
            f"a bootstrap row belongs to generation 0 without a lost interval; got generation "
            f"{generation}; a snapshot after a loss is a 'resnapshot' row"
        )
    if event == "resnapshot" and generation < 1:
        raise InternalError(
            f"a resnapshot row opens a generation >= 1; got {generation}; the first snapshot "
            "is a 'bootstrap' row"
        )
    row = _at_lsn(
        event,
        app_id=app_id,
        generation=generation,
        target=target,
        lsn=snapshot_lsn,
        commit_ts=commit_ts,
        rows=rows,
        started_at=started_at,
        detail=detail,
        written_at=written_at,
    )
    return replace(
        row,
        duration_ms=duration_ms,
        retention_watermark_ts=lost_to_ts,
        retention_headroom_hours=retention_headroom_hours(commit_ts, lost_to_ts),
        lost_from_ts=lost_from_ts,
        lost_to_ts=lost_to_ts,
    )


def snapshot_open_row(
    *,
    app_id: str,
    target: str,
    lsn: str,
    commit_ts: datetime | None,
    detail: SnapshotOpenDetail,
    started_at: datetime | None,
    written_at: datetime,
) -> FactsRow:
    """A `snapshot_open` row of the generation its detail names (the gap from the detail)."""
    row = _at_lsn(
        "snapshot_open",
        app_id=app_id,
        generation=detail["generation"],
        target=target,
        lsn=lsn,
        commit_ts=commit_ts,
        rows=0,
        started_at=started_at,
        detail=detail,
        written_at=written_at,
    )
    return replace(
        row,
        lost_from_ts=parse_time(detail.get("lost_from_ts")),
        lost_to_ts=parse_time(detail.get("lost_to_ts")),
    )


def snapshot_plan_row(
    *,
    app_id: str,
    generation: int,
    target: str,
    commit_ts: datetime | None,
    detail: SnapshotPlanDetail,
    started_at: datetime,
    duration_ms: int,
    written_at: datetime,
) -> FactsRow:
    """The `snapshot_plan` row of a chunked snapshot; its LSN is the plan's snapshot S."""
    row = _at_lsn(
        "snapshot_plan",
        app_id=app_id,
        generation=generation,
        target=target,
        lsn=detail["snapshot"],
        commit_ts=commit_ts,
        rows=0,
        started_at=started_at,
        detail=detail,
        written_at=written_at,
    )
    return replace(row, duration_ms=duration_ms)


def snapshot_chunk_row(
    *,
    app_id: str,
    generation: int,
    target: str,
    stamp_lsn: str,
    stamp_commit_ts: datetime | None,
    high_lsn: str | None,
    high_commit_ts: datetime | None,
    rows: int,
    read_seconds: float | None,
    read_mb: float | None,
    detail: SnapshotChunkDetail,
    started_at: datetime | None,
    written_at: datetime,
) -> FactsRow:
    """One chunk of a wave: min = the wave's stamp L, max = max_lsn read right after the chunk."""
    row = _at_lsn(
        "snapshot_chunk",
        app_id=app_id,
        generation=generation,
        target=target,
        lsn=stamp_lsn,
        commit_ts=stamp_commit_ts,
        rows=rows,
        started_at=started_at,
        detail=detail,
        written_at=written_at,
    )
    return replace(
        row,
        max_lsn=high_lsn,
        max_commit_ts=high_commit_ts,
        read_seconds=read_seconds,
        read_mb=read_mb,
    )
