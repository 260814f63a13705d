"""A stream's history as its facts table records it: every micro-batch's headroom and lag, and
the events that changed its data (decision 1380).

What `mssql-cdc status --chart` draws. `history_from_rows` is pure, so a test can hold the
plotted values against the facts rows; `read_history` reads the rows in process (no Spark), as
`read_health` does. Every value is a facts column as written; the one choice made here is the
time each row is placed at: its source commit time (`end_commit_ts`, else `max_commit_ts`),
so batches and events share one time axis, the source's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mssql_cdc.core import validate_app_id
from mssql_cdc.facts.health import check_health_table, family_rows

__all__ = [
    "HISTORY_EVENTS",
    "HistoryEvent",
    "HistoryPoint",
    "StreamHistory",
    "history_from_rows",
    "read_history",
]

# The events a chart marks: the first copy, a re-snapshot (with the changes lost before it)
# and changes skipped.
HISTORY_EVENTS: tuple[str, ...] = ("bootstrap", "resnapshot", "data_skipped")

_COLUMNS = (
    "app_id",
    "generation",
    "batch_id",
    "end_commit_ts",
    "max_commit_ts",
    "ingestion_lag_seconds",
    "retention_headroom_hours",
    "event",
    "lost_from_ts",
    "lost_to_ts",
    "written_at",
)


@dataclass(frozen=True, slots=True)
class HistoryPoint:
    """One micro-batch row: where it ended on the source's clock, and its headroom and lag."""

    generation: int
    batch_id: int
    at: datetime  # end_commit_ts, else max_commit_ts (UTC)
    retention_headroom_hours: float | None
    ingestion_lag_seconds: float | None


@dataclass(frozen=True, slots=True)
class HistoryEvent:
    """One event row: a bootstrap, a re-snapshot or a skip, and the span of changes lost."""

    event: str
    generation: int
    at: datetime | None  # the snapshot's or the skip's commit time; None when unknown
    lost_from_ts: datetime | None
    lost_to_ts: datetime | None


@dataclass(frozen=True, slots=True)
class StreamHistory:
    """The points and events of one stream (its app_id and every generation), oldest first."""

    app_id: str
    points: tuple[HistoryPoint, ...]
    events: tuple[HistoryEvent, ...]


def history_from_rows(app_id: str, rows: Iterable[Mapping[str, Any]]) -> StreamHistory:
    """The history of `app_id` from facts rows of its family (columns as in the facts table).

    A micro-batch row (no event, a batch id) with no commit time is left out: it has no place
    on the source's clock. Points are ordered by generation and batch id, events by time.
    """
    points: list[HistoryPoint] = []
    events: list[HistoryEvent] = []
    for r in rows:
        at = r.get("end_commit_ts") or r.get("max_commit_ts")
        if r.get("event") is None:
            if r.get("batch_id") is None or at is None:
                continue
            points.append(
                HistoryPoint(
                    generation=int(r["generation"]),
                    batch_id=int(r["batch_id"]),
                    at=at,
                    retention_headroom_hours=r.get("retention_headroom_hours"),
                    ingestion_lag_seconds=r.get("ingestion_lag_seconds"),
                )
            )
        elif r["event"] in HISTORY_EVENTS:
            events.append(
                HistoryEvent(
                    event=r["event"],
                    generation=int(r["generation"]),
                    at=at,
                    lost_from_ts=r.get("lost_from_ts"),
                    lost_to_ts=r.get("lost_to_ts"),
                )
            )
    points.sort(key=lambda p: (p.generation, p.batch_id))
    events.sort(key=lambda e: (e.at or e.lost_to_ts or datetime.min, e.generation))
    return StreamHistory(app_id, tuple(points), tuple(events))


def read_history(facts_table: str, app_id: str) -> StreamHistory:
    """Read the history of the stream `app_id` from the facts table at `facts_table`.

    Raises:
        ConfigError: as `read_health`: a catalog name, a URI, a missing location, a folder
            without a Delta table, a table of another kind or one Python cannot read here.
    """
    validate_app_id(app_id)
    ref = check_health_table(facts_table)
    return history_from_rows(app_id, family_rows(ref, app_id, HISTORY_EVENTS, _COLUMNS))
