"""The snapshot facts of one stream family: opens, completions, plans and chunk rows.

A stream family of `A` is the facts rows with (`generation = 0` and `app_id = A`) or
(`generation = n > 0` and `app_id = A.g<n>`): two equalities, never a pattern built from `A`
(spec 30 section 1). The recovery, the mode lock and `backfill()` read snapshot state only
through the functions here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from mssql_cdc import _clock, tables
from mssql_cdc.facts import family_condition
from mssql_cdc.lsn import Lsn
from mssql_cdc.offsets import StreamOffset, format_commit_ts
from mssql_cdc.payloads import SnapshotOpenDetail, SnapshotPlanDetail, read_open
from mssql_cdc.recovery_decision import CompletionRow, Mode, OpenRow

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Row, SparkSession

__all__ = [
    "ChunkFact",
    "CompletionFact",
    "OpenFact",
    "PlanFact",
    "SnapshotFacts",
    "chunk_facts",
    "completion_facts",
    "family_rows",
    "is_complete",
    "newest_batch",
    "now_naive",
    "open_facts",
    "plan_fact",
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


def family_rows(
    spark: SparkSession, facts_table: str, app_id: str, *, checked: bool = False
) -> DataFrame | None:
    """The family's facts rows, or None when the facts table does not exist yet.

    `checked`: this run already opened the table (it exists and is a facts table), so it is
    queried without looking at its properties again, which costs a Delta job per look.
    """
    if checked:
        return spark.table(tables.table_ref(facts_table).sql).where(family_condition(app_id))
    handle = tables.open_for_read(spark, facts_table, "facts")
    if handle is None:
        return None
    return spark.table(handle.ref.sql).where(family_condition(app_id))


SNAPSHOT_EVENTS = ("snapshot_open", "snapshot_plan", "snapshot_chunk", "bootstrap", "resnapshot")


def _detail(r: Row) -> dict[str, Any]:
    value = json.loads(r["detail"] or "{}")
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True, slots=True)
class SnapshotFacts:
    """The family's snapshot event rows, read in one query; the views below filter them."""

    rows: tuple[Row, ...]

    def _of(self, *events: str) -> list[Row]:
        return [r for r in self.rows if r["event"] in events]

    def opens(self) -> list[OpenFact]:
        """Every `snapshot_open` row, oldest S first."""
        found = []
        for r in self._of("snapshot_open"):
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
            )
            for r in self._of("bootstrap", "resnapshot")
        ]
        return sorted(found, key=lambda c: c.lsn.lsn)

    def plan(self, s: str) -> PlanFact | None:
        """The stored plan of snapshot `s`, or None before the first `backfill()` planned it."""
        for r in self._of("snapshot_plan"):
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
        for r in self._of("snapshot_chunk"):
            detail = _detail(r)
            if detail.get("snapshot") != s:
                continue
            fact = ChunkFact(
                chunk=int(detail["chunk"]),
                wave=int(detail.get("wave", 0)),
                rows=int(r["rows"] or 0),
                stamp_lsn=r["min_lsn"],
                high_lsn=r["max_lsn"],
            )
            by_chunk.setdefault(fact.chunk, fact)
        return [by_chunk[c] for c in sorted(by_chunk)]


def snapshot_facts(
    spark: SparkSession, facts_table: str, app_id: str, *, checked: bool = False
) -> SnapshotFacts:
    """The family's snapshot event rows in one query; none when the facts table is missing.
    `checked` as in `family_rows`."""
    rows = family_rows(spark, facts_table, app_id, checked=checked)
    if rows is None:
        return SnapshotFacts(())
    return SnapshotFacts(tuple(rows.where(rows["event"].isin(*SNAPSHOT_EVENTS)).collect()))


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


def newest_batch(
    spark: SparkSession, facts_table: str, app_id: str
) -> tuple[float | None, datetime | None] | None:
    """The family's newest micro-batch row by `written_at`: (headroom hours, written_at)."""
    rows = family_rows(spark, facts_table, app_id)
    if rows is None:
        return None
    newest = (
        rows.where(rows["event"].isNull())
        .orderBy(rows["written_at"].desc())
        .select("retention_headroom_hours", "written_at")
        .limit(1)
        .collect()
    )
    if not newest:
        return None
    headroom = newest[0]["retention_headroom_hours"]
    return (None if headroom is None else float(headroom), newest[0]["written_at"])
