"""A stream's health as its facts table records it, read in process: no Spark, no JVM.

What `mssql-cdc status --facts` shows: the newest micro-batch row of the stream's family
(batch id, LSN range, end offset, lag behind the source's newest change, retention headroom)
and the newest row of each event a person acts on. Every value is a facts column as written;
nothing is computed here.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

import pyarrow.compute as pc

from mssql_cdc.core import spark_only, validate_app_id
from mssql_cdc.errors import ConfigError
from mssql_cdc.facts.detail_payloads import format_time
from mssql_cdc.facts.rows import family_filter
from mssql_cdc.tables import (
    KIND_PROPERTY,
    TableOutOfReach,
    TableRef,
    is_local,
    open_table,
    read_rows,
    table_ref,
)

__all__ = [
    "HEALTH_EVENTS",
    "BatchHealth",
    "EventHealth",
    "FactsHealth",
    "check_health_table",
    "read_health",
    "unreadable",
]

# The events whose newest row tells a person what happened to the stream's data.
HEALTH_EVENTS: tuple[str, ...] = ("bootstrap", "resnapshot", "data_skipped", "snapshot_open")

_COLUMNS = (
    "app_id",
    "generation",
    "batch_id",
    "rows",
    "min_lsn",
    "max_lsn",
    "end_lsn",
    "end_commit_ts",
    "source_max_commit_ts",
    "ingestion_lag_seconds",
    "retention_watermark_ts",
    "retention_headroom_hours",
    "event",
    "lost_from_ts",
    "lost_to_ts",
    "detail",
    "written_at",
)


@dataclass(frozen=True, slots=True)
class BatchHealth:
    """The newest micro-batch row of the family; times as facts JSON text, UTC."""

    app_id: str
    generation: int
    batch_id: int
    rows: int | None
    min_lsn: str | None
    max_lsn: str | None
    end_lsn: str | None
    end_commit_ts: str | None
    source_max_commit_ts: str | None
    ingestion_lag_seconds: float | None  # behind the source's newest change, as the sink saw it
    retention_watermark_ts: str | None
    retention_headroom_hours: float | None
    written_at: str | None


@dataclass(frozen=True, slots=True)
class EventHealth:
    """The newest row of one event kind in the family."""

    event: str
    app_id: str
    generation: int
    batch_id: int | None
    lsn: str | None  # min_lsn: the event's LSN (the snapshot's S, or where a skip resumed)
    rows: int | None
    lost_from_ts: str | None
    lost_to_ts: str | None
    detail: Any  # the row's detail JSON, parsed; None without one
    written_at: str | None


@dataclass(frozen=True, slots=True)
class FactsHealth:
    """What the facts table says about one stream: its newest batch and events."""

    table: str
    latest_batch: BatchHealth | None
    events: Mapping[str, EventHealth | None]  # every name of HEALTH_EVENTS, in that order

    def to_json(self) -> dict[str, Any]:
        def plain(value: BatchHealth | EventHealth | None) -> dict[str, Any] | None:
            if value is None:
                return None
            return asdict(value)

        return {
            "table": self.table,
            "latest_batch": plain(self.latest_batch),
            "events": {name: plain(self.events[name]) for name in HEALTH_EVENTS},
        }


def read_health(facts_table: str, app_id: str) -> FactsHealth:
    """Read the health of the stream `app_id` from the facts table at `facts_table`.

    Raises:
        ConfigError: `facts_table` is a catalog name, a missing location, a folder without a
            Delta table, a table of another kind, or a table Python cannot read here; the
            message names it and says what to pass instead.
    """
    validate_app_id(app_id)
    ref = _checked(facts_table)
    rows = family_rows(ref, app_id, HEALTH_EVENTS, _COLUMNS)
    return FactsHealth(
        table=ref.text if ref.location is None else ref.location,
        latest_batch=_latest_batch(rows),
        events={name: _latest_event(rows, name) for name in HEALTH_EVENTS},
    )


def family_rows(
    ref: TableRef, app_id: str, events: Sequence[str], columns: Sequence[str]
) -> list[dict[str, Any]]:
    """`columns` of the batch rows (no event) and the `events` rows of the stream `app_id`
    and its generations, read in process from the facts table at `ref`.

    Raises:
        ConfigError: the table cannot be read here (`unreadable`'s message).
    """
    wanted = pc.field("event").is_null() | pc.field("event").isin(list(events))
    try:
        table = read_rows(ref, columns=list(columns), where=family_filter(app_id) & wanted)
    except TableOutOfReach as exc:
        raise unreadable(ref, str(exc)) from exc
    return table.to_pylist()  # type: ignore[no-any-return]


def check_health_table(facts_table: str) -> TableRef:
    """Check that `facts_table` is a facts table status can read here, reading only its log;
    its reference.

    Raises:
        ConfigError: as read_health.
    """
    return _checked(facts_table)


def _checked(text: str) -> TableRef:
    ref = table_ref(text, argument="--facts")
    if ref.location is None:
        raise ConfigError(
            f"--facts {text} is a catalog name; status reads the facts table without Spark, "
            "from its files: pass the table's path (DESCRIBE DETAIL shows its location)"
        )
    if spark_only(ref.location):
        # Never handed to deltalake: it would look for cloud credentials (an instance
        # metadata service among them) and answer with a chain of errors.
        raise ConfigError(
            f"--facts {text} is a URI or a /dbfs/ path, which status does not read (it reads "
            "files without Spark and never looks for cloud credentials); pass the facts "
            "table's local or Volume path (/Volumes/<catalog>/<schema>/<volume>/...)"
        )
    local = is_local(ref)  # elsewhere (a URI, /dbfs/) only deltalake can tell
    if local and not os.path.exists(ref.location):
        raise ConfigError(
            f"--facts {ref.location} does not exist; pass the facts table given to to_delta "
            "(it exists once the stream has written a batch or an event)"
        )
    if local and not os.path.isdir(os.path.join(ref.location, "_delta_log")):
        raise ConfigError(
            f"--facts {ref.location} holds no Delta table (no _delta_log folder); pass the "
            "facts table given to to_delta"
        )
    kind = _kind(ref)
    if kind != "facts":
        what = f"a {kind} table" if kind else f"a Delta table without {KIND_PROPERTY}"
        raise ConfigError(
            f"--facts {ref.location} is {what}, not an mssql_cdc facts table; pass the facts "
            "table given to to_delta"
        )
    return ref


def _kind(ref: TableRef) -> str | None:
    try:
        return open_table(ref).metadata().configuration.get(KIND_PROPERTY)
    except TableOutOfReach as exc:
        raise unreadable(ref, str(exc)) from exc


def unreadable(ref: TableRef, reason: str) -> ConfigError:
    """The error for a facts table deltalake cannot read here."""
    return ConfigError(
        f"--facts {ref.name} cannot be read in process here ({reason}); pass a local path or "
        "a Volume path of the facts table"
    )


def _int(value: int | None) -> int | None:
    return None if value is None else int(value)


def _latest_batch(rows: Sequence[Mapping[str, Any]]) -> BatchHealth | None:
    batches = [r for r in rows if r["event"] is None and r["batch_id"] is not None]
    if not batches:
        return None
    # Generations only grow, and batch ids grow within one.
    r = max(batches, key=lambda b: (int(b["generation"]), int(b["batch_id"])))
    return BatchHealth(
        app_id=r["app_id"],
        generation=int(r["generation"]),
        batch_id=int(r["batch_id"]),
        rows=_int(r["rows"]),
        min_lsn=r["min_lsn"],
        max_lsn=r["max_lsn"],
        end_lsn=r["end_lsn"],
        end_commit_ts=format_time(r["end_commit_ts"]),
        source_max_commit_ts=format_time(r["source_max_commit_ts"]),
        ingestion_lag_seconds=r["ingestion_lag_seconds"],
        retention_watermark_ts=format_time(r["retention_watermark_ts"]),
        retention_headroom_hours=r["retention_headroom_hours"],
        written_at=format_time(r["written_at"]),
    )


def _latest_event(rows: Sequence[Mapping[str, Any]], event: str) -> EventHealth | None:
    found = [r for r in rows if r["event"] == event]
    if not found:
        return None
    r = max(found, key=lambda e: (e["written_at"] or datetime.min, int(e["generation"])))
    return EventHealth(
        event=event,
        app_id=r["app_id"],
        generation=int(r["generation"]),
        batch_id=_int(r["batch_id"]),
        lsn=r["min_lsn"],
        rows=_int(r["rows"]),
        lost_from_ts=format_time(r["lost_from_ts"]),
        lost_to_ts=format_time(r["lost_to_ts"]),
        detail=None if r["detail"] is None else json.loads(r["detail"]),
        written_at=format_time(r["written_at"]),
    )
