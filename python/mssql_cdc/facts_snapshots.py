"""The facts rows of snapshots: opens, plans, chunks and completions (sections 4.2 and 5).

All have no `batch_id`, the `app_id` and `generation` of the sink id of the generation they
belong to, the commit times of their LSNs, and NULL counters and lags.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from mssql_cdc.errors import ConfigError
from mssql_cdc.facts import FactsRow
from mssql_cdc.facts_keys import sink_id
from mssql_cdc.facts_metrics import retention_headroom_hours
from mssql_cdc.payloads import (
    SnapshotChunkDetail,
    SnapshotCompletionDetail,
    SnapshotOpenDetail,
    SnapshotPlanDetail,
    parse_time,
    to_json,
)

__all__ = [
    "snapshot_chunk_row",
    "snapshot_completion_row",
    "snapshot_open_row",
    "snapshot_plan_row",
]


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
    detail: SnapshotCompletionDetail | None = None,
) -> FactsRow:
    """A `bootstrap` (generation 0, no gap) or `resnapshot` (generation >= 1) completion row.

    Raises:
        ConfigError: the event does not match the generation, or a bootstrap carries a gap.
    """
    if event == "bootstrap" and (generation != 0 or lost_from_ts or lost_to_ts):
        raise ConfigError(
            f"a bootstrap row belongs to generation 0 without a lost interval; got generation "
            f"{generation}; a snapshot after a loss is a 'resnapshot' row"
        )
    if event == "resnapshot" and generation < 1:
        raise ConfigError(
            f"a resnapshot row opens a generation >= 1; got {generation}; the first snapshot "
            "is a 'bootstrap' row"
        )
    return FactsRow(
        app_id=sink_id(app_id, generation),
        generation=generation,
        rows=rows,
        min_lsn=snapshot_lsn,
        max_lsn=snapshot_lsn,
        min_commit_ts=commit_ts,
        max_commit_ts=commit_ts,
        started_at=started_at,
        duration_ms=duration_ms,
        retention_watermark_ts=lost_to_ts,
        retention_headroom_hours=retention_headroom_hours(commit_ts, lost_to_ts),
        event=event,
        lost_from_ts=lost_from_ts,
        lost_to_ts=lost_to_ts,
        end_lsn=snapshot_lsn,
        end_commit_ts=commit_ts,
        detail=to_json(detail),
        target=target,
        written_at=written_at,
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
    generation = detail["generation"]
    return FactsRow(
        app_id=sink_id(app_id, generation),
        generation=generation,
        rows=0,
        min_lsn=lsn,
        max_lsn=lsn,
        min_commit_ts=commit_ts,
        max_commit_ts=commit_ts,
        started_at=started_at,
        event="snapshot_open",
        lost_from_ts=parse_time(detail.get("lost_from_ts")),
        lost_to_ts=parse_time(detail.get("lost_to_ts")),
        end_lsn=lsn,
        end_commit_ts=commit_ts,
        detail=to_json(detail),
        target=target,
        written_at=written_at,
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
    lsn = detail["snapshot"]
    return FactsRow(
        app_id=sink_id(app_id, generation),
        generation=generation,
        rows=0,
        min_lsn=lsn,
        max_lsn=lsn,
        min_commit_ts=commit_ts,
        max_commit_ts=commit_ts,
        started_at=started_at,
        duration_ms=duration_ms,
        event="snapshot_plan",
        end_lsn=lsn,
        end_commit_ts=commit_ts,
        detail=to_json(detail),
        target=target,
        written_at=written_at,
    )


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
    return FactsRow(
        app_id=sink_id(app_id, generation),
        generation=generation,
        rows=rows,
        min_lsn=stamp_lsn,
        max_lsn=high_lsn,
        min_commit_ts=stamp_commit_ts,
        max_commit_ts=high_commit_ts,
        started_at=started_at,
        read_seconds=read_seconds,
        read_mb=read_mb,
        event="snapshot_chunk",
        end_lsn=stamp_lsn,
        end_commit_ts=stamp_commit_ts,
        detail=to_json(detail),
        target=target,
        written_at=written_at,
    )
