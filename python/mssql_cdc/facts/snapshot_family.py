"""The snapshot facts of one stream family: opens, completions, plans and chunk rows.

A stream family of `A` is the facts rows with (`generation = 0` and `app_id = A`) or
(`generation = n > 0` and `app_id = A.g<n>`): two equalities, never a pattern built from `A`
(docs/tables.md, 'Rows as values'). The recovery, the mode lock and `backfill()` read snapshot
state (and the recovery the micro-batch rows) only here; a missing facts table reads as empty.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

import pyarrow.compute as pc

from mssql_cdc.core import CompletionRow, Lsn, Mode, OpenRow, StreamOffset, format_commit_ts
from mssql_cdc.core import clock as _clock
from mssql_cdc.facts.detail_payloads import SnapshotOpenDetail, SnapshotPlanDetail, read_open
from mssql_cdc.facts.rows import family_condition, family_filter
from mssql_cdc.tables import TableOutOfReach, TableRef, open_for_read, read_rows, table_ref

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "FACT_COLUMNS",
    "PREFLIGHT_EVENTS",
    "SNAPSHOT_EVENTS",
    "BatchSample",
    "ChunkFact",
    "CompletionFact",
    "OpenFact",
    "PlanFact",
    "SnapshotFacts",
    "batch_samples",
    "chunk_facts",
    "completion_facts",
    "family_rows",
    "is_complete",
    "newest_batch",
    "now_naive",
    "open_facts",
    "plan_fact",
    "sink_has_batches",
    "snapshot_facts",
]

Kind = Literal["bootstrap", "resnapshot"]


def now_naive() -> datetime:
    """The library clock's now as the facts tables store times: naive UTC."""
    return _clock.now().astimezone(UTC).replace(tzinfo=None)


def _offset(at: str, commit_ts: datetime | None) -> StreamOffset:
    return StreamOffset(Lsn(at), format_commit_ts(commit_ts) or None)


@dataclass(frozen=True, slots=True)
class OpenFact:
    """A `snapshot_open` row: the snapshot opened at `s` for `generation`."""

    app_id: str  # the sink id of its generation
    generation: int
    mode: Mode
    kind: Kind
    s: StreamOffset
    target: str | None
    detail: SnapshotOpenDetail
    written_at: datetime | None
    lost_from_ts: datetime | None
    lost_to_ts: datetime | None

    def as_open_row(self) -> OpenRow:
        return OpenRow(generation=self.generation, mode=self.mode, kind=self.kind, s=self.s)


@dataclass(frozen=True, slots=True)
class CompletionFact:
    """A `bootstrap` or `resnapshot` row: a snapshot at `lsn` that downstream rebuilds from."""

    event: Kind
    generation: int
    lsn: StreamOffset
    rows: int | None
    target: str | None
    duration_ms: int | None = None
    written_at: datetime | None = None
    chunked: bool = False  # a chunked snapshot's row names its chunks in `detail`

    def as_completion_row(self) -> CompletionRow:
        return CompletionRow(generation=self.generation, lsn=self.lsn)


@dataclass(frozen=True, slots=True)
class PlanFact:
    """The stored `snapshot_plan` of a chunked snapshot."""

    detail: SnapshotPlanDetail
    generation: int


@dataclass(frozen=True, slots=True)
class ChunkFact:
    """A `snapshot_chunk` row: one chunk read in one wave."""

    chunk: int
    wave: int
    rows: int
    stamp_lsn: str
    high_lsn: str | None
    carried: bool = False  # written from bronze by reconcile(repair=True), not read


def family_rows(
    spark: SparkSession, facts_table: str, app_id: str, *, checked: bool = False
) -> DataFrame | None:
    """The family's facts rows, or None when the facts table does not exist yet.

    `checked`: this run already opened the table (it exists and is a facts table), so it is
    queried without looking at its properties again, which costs a Delta job per look.
    """
    if checked:
        return spark.table(table_ref(facts_table).sql).where(family_condition(app_id))
    handle = open_for_read(spark, facts_table, "facts")
    if handle is None:
        return None
    return spark.table(handle.ref.sql).where(family_condition(app_id))


SNAPSHOT_EVENTS = ("snapshot_open", "snapshot_plan", "snapshot_chunk", "bootstrap", "resnapshot")
# What the mode lock and the recovery decide on: opens and completions, no plans or chunks.
PREFLIGHT_EVENTS = ("snapshot_open", "bootstrap", "resnapshot")
# The columns SnapshotFacts reads.
FACT_COLUMNS = (
    "app_id",
    "generation",
    "event",
    "detail",
    "min_lsn",
    "max_lsn",
    "min_commit_ts",
    "max_commit_ts",
    "rows",
    "duration_ms",
    "target",
    "written_at",
    "lost_from_ts",
    "lost_to_ts",
)


def _detail(r: Mapping[str, Any]) -> dict[str, Any]:
    value = json.loads(r["detail"] or "{}")
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True, slots=True)
class SnapshotFacts:
    """The family's snapshot event rows, read in one query; the views below filter them.

    `events` are the events the rows were read for: a view of other events raises instead of
    answering "none" (the pre-flight reads only opens and completions).
    """

    rows: tuple[Mapping[str, Any], ...]
    events: tuple[str, ...] = SNAPSHOT_EVENTS

    def _rows_of(self, *events: str) -> list[Mapping[str, Any]]:
        unread = [e for e in events if e not in self.events]
        if unread:
            raise RuntimeError(f"these snapshot facts were read without their {unread} rows")
        return [r for r in self.rows if r["event"] in events]

    def opens(self) -> list[OpenFact]:
        """Every `snapshot_open` row, oldest S first."""
        found = []
        for r in self._rows_of("snapshot_open"):
            detail = read_open(r["detail"] or "{}")
            found.append(
                OpenFact(
                    app_id=r["app_id"],
                    generation=int(r["generation"]),
                    mode=detail["mode"],
                    kind=detail["kind"],
                    s=_offset(r["min_lsn"], r["min_commit_ts"]),
                    target=r["target"],
                    detail=detail,
                    written_at=r["written_at"],
                    lost_from_ts=r["lost_from_ts"],
                    lost_to_ts=r["lost_to_ts"],
                )
            )
        return sorted(found, key=lambda o: (o.s.lsn, o.written_at or datetime.min))

    def completions(self) -> list[CompletionFact]:
        """Every `bootstrap` and `resnapshot` row, oldest LSN first."""
        found = [
            CompletionFact(
                event="bootstrap" if r["event"] == "bootstrap" else "resnapshot",
                generation=int(r["generation"]),
                lsn=_offset(r["max_lsn"], r["max_commit_ts"]),
                rows=None if r["rows"] is None else int(r["rows"]),
                target=r["target"],
                duration_ms=None if r["duration_ms"] is None else int(r["duration_ms"]),
                written_at=r["written_at"],
                # a chunked completion names its chunks; a requested full one says only that
                chunked="chunks" in _detail(r),
            )
            for r in self._rows_of("bootstrap", "resnapshot")
        ]
        return sorted(found, key=lambda c: c.lsn.lsn)

    def full_timings(self) -> tuple[tuple[int, int], ...]:
        """(rows, duration_ms) of the full snapshots that read rows, newest first: the rate
        the duration guard estimates from (reused and chunked snapshots left out)."""
        timed = [
            c for c in self.completions() if not c.chunked and c.rows is not None and c.duration_ms
        ]
        timed.sort(key=lambda c: c.written_at or datetime.min, reverse=True)
        return tuple((c.rows or 0, c.duration_ms or 0) for c in timed)

    def plan(self, s: str) -> PlanFact | None:
        """The stored plan of snapshot `s`, or None before the first `backfill()` planned it."""
        for r in self._rows_of("snapshot_plan"):
            detail = _detail(r)
            if detail.get("snapshot") == s:
                plan: SnapshotPlanDetail = {
                    "snapshot": s,
                    "kind": detail.get("kind", "keyset"),
                    "keys": list(detail.get("keys", [])),
                    "chunk_rows": int(detail.get("chunk_rows", 0)),
                    "chunks": [list(c) for c in detail.get("chunks", [])],
                }
                return PlanFact(plan, int(r["generation"]))
        return None

    def chunks(self, s: str) -> list[ChunkFact]:
        """The `snapshot_chunk` rows of snapshot `s` by chunk number (a chunk's first row wins)."""
        by_chunk: dict[int, ChunkFact] = {}
        for r in self._rows_of("snapshot_chunk"):
            detail = _detail(r)
            if detail.get("snapshot") != s:
                continue
            fact = ChunkFact(
                chunk=int(detail["chunk"]),
                wave=int(detail.get("wave", 0)),
                rows=int(r["rows"] or 0),
                stamp_lsn=r["min_lsn"],
                high_lsn=r["max_lsn"],
                carried=bool(detail.get("carried", False)),
            )
            by_chunk.setdefault(fact.chunk, fact)
        return [by_chunk[c] for c in sorted(by_chunk)]


def snapshot_facts(
    spark: SparkSession,
    facts_table: str,
    app_id: str,
    *,
    checked: bool = False,
    events: tuple[str, ...] = SNAPSHOT_EVENTS,
) -> SnapshotFacts:
    """The family's rows of `events` in one read; none when the facts table is missing.
    `checked` as in `family_rows`. A path table is read in process (no Spark job)."""
    ref = table_ref(facts_table)
    if not checked and open_for_read(spark, ref, "facts") is None:
        return SnapshotFacts((), events)
    try:
        where = family_filter(app_id) & pc.field("event").isin(list(events))
        return SnapshotFacts(tuple(_read(ref, FACT_COLUMNS, where)), events)
    except TableOutOfReach:
        pass  # a catalog name, a path only Spark reads, or an older shape
    rows = family_rows(spark, facts_table, app_id, checked=True)
    if rows is None:
        return SnapshotFacts((), events)
    present = [c for c in FACT_COLUMNS if c in rows.columns]  # an older table lacks some
    found = rows.where(rows["event"].isin(*events)).select(*present).collect()
    return SnapshotFacts(
        tuple({c: (r[c] if c in present else None) for c in FACT_COLUMNS} for r in found), events
    )


def _read(ref: TableRef, columns: tuple[str, ...], where: pc.Expression) -> list[dict[str, Any]]:
    """The facts rows of `ref` read in process, as `collect()` gives them; TableOutOfReach."""
    rows: list[dict[str, Any]] = read_rows(ref, columns=columns, where=where).to_pylist()
    return rows


def open_facts(
    spark: SparkSession, facts_table: str, app_id: str, *, checked: bool = False
) -> list[OpenFact]:
    """Every `snapshot_open` row of the family, oldest S first."""
    return snapshot_facts(spark, facts_table, app_id, checked=checked).opens()


def completion_facts(spark: SparkSession, facts_table: str, app_id: str) -> list[CompletionFact]:
    """Every `bootstrap` and `resnapshot` row of the family, oldest LSN first."""
    return snapshot_facts(spark, facts_table, app_id).completions()


def plan_fact(
    spark: SparkSession, facts_table: str, app_id: str, s: str, *, checked: bool = False
) -> PlanFact | None:
    """The stored plan of snapshot `s`, or None before the first `backfill()` planned it."""
    return snapshot_facts(spark, facts_table, app_id, checked=checked).plan(s)


def chunk_facts(
    spark: SparkSession, facts_table: str, app_id: str, s: str, *, checked: bool = False
) -> list[ChunkFact]:
    """The `snapshot_chunk` rows of snapshot `s`, by chunk number."""
    return snapshot_facts(spark, facts_table, app_id, checked=checked).chunks(s)


def is_complete(open_fact: OpenFact, completions: list[CompletionFact]) -> bool:
    """An open is complete once a completion of the family has `max_lsn >= S`."""
    return any(c.lsn.lsn >= open_fact.s.lsn for c in completions)


@dataclass(frozen=True, slots=True)
class BatchSample:
    """A micro-batch row of the family: when it was written and what it saw of the retention."""

    written_at: datetime  # naive UTC, as the facts table stores it
    headroom_hours: float | None
    source_max_commit_ts: datetime | None
    retention_watermark_ts: datetime | None


def batch_samples(
    spark: SparkSession, facts_table: str, app_id: str, *, days: float = 7.0
) -> tuple[BatchSample, ...]:
    """The family's micro-batch rows of the last `days`: headroom and retention figures."""
    since = now_naive() - timedelta(days=days)
    found = _micro_batches(
        spark,
        facts_table,
        app_id,
        (
            "written_at",
            "retention_headroom_hours",
            "source_max_commit_ts",
            "retention_watermark_ts",
        ),
        pc.field("written_at") >= since,
        lambda rows: rows.where(rows["written_at"] >= since),
    )
    return tuple(BatchSample(*r.values()) for r in found or () if r["written_at"] is not None)


def sink_has_batches(spark: SparkSession, facts_table: str, sink: str) -> bool:
    """Whether the sink id `sink` wrote any micro-batch row (`event IS NULL`)."""
    handle = open_for_read(spark, facts_table, "facts")
    if handle is None:
        return False
    try:
        where = pc.field("event").is_null() & (pc.field("app_id") == sink)
        return bool(_read(handle.ref, ("app_id",), where))
    except TableOutOfReach:
        pass  # a catalog name, or a path only Spark reads
    df = spark.table(handle.ref.sql)
    return bool(df.where(df["event"].isNull() & (df["app_id"] == sink)).take(1))


def newest_batch(
    spark: SparkSession, facts_table: str, app_id: str
) -> tuple[float | None, datetime | None] | None:
    """The family's newest micro-batch row by `written_at`: (headroom hours, written_at)."""
    found = _micro_batches(
        spark,
        facts_table,
        app_id,
        ("retention_headroom_hours", "written_at"),
        None,
        lambda rows: rows.orderBy(rows["written_at"].desc()).limit(1),
    )
    # as ORDER BY written_at DESC: NULLs last
    newest = max(
        found or (),
        key=lambda r: (r["written_at"] is not None, r["written_at"] or datetime.min),
        default=None,
    )
    if newest is None:
        return None
    headroom = newest["retention_headroom_hours"]
    return (None if headroom is None else float(headroom), newest["written_at"])


def _micro_batches(
    spark: SparkSession,
    facts_table: str,
    app_id: str,
    columns: tuple[str, ...],
    where: pc.Expression | None,
    query: Callable[[DataFrame], DataFrame],
) -> list[dict[str, Any]] | None:
    """`columns` of the family's micro-batch rows kept by the Arrow filter `where`, read in
    process; through Spark, those `query` keeps. None without the facts table."""
    ref = table_ref(facts_table)
    if open_for_read(spark, ref, "facts") is None:
        return None
    try:
        kept = family_filter(app_id) & pc.field("event").is_null()
        return _read(ref, columns, kept if where is None else kept & where)
    except TableOutOfReach:  # a catalog name, or a path only Spark reads
        rows = spark.table(ref.sql).where(family_condition(app_id))
        return [
            r.asDict() for r in query(rows.where(rows["event"].isNull())).select(*columns).collect()
        ]
