"""What the facts table says about one bronze's snapshots, as silver needs it.

docs/silver.md, 'How silver follows bronze', step 1, says which rows it reads.

Silver knows no app_id, so it selects by `target` = the bronze string and tests openness by
target: an open at S is closed by a completion row of this bronze with `max_lsn >= S`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mssql_cdc.core import Mode
from mssql_cdc.tables import TableOutOfReach, open_for_read, read_rows, table_ref

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "BronzeSnapshotFacts",
    "ChunkRow",
    "OpenedSnapshot",
    "facts_from_rows",
    "read_snapshot_facts",
]

_EVENTS = (
    "bootstrap",
    "resnapshot",
    "snapshot_open",
    "snapshot_chunk",
    "capture_instance_switched",
)


@dataclass(frozen=True, slots=True)
class OpenedSnapshot:
    """A 'snapshot_open' row: its S (min_lsn) and its mode."""

    lsn: str
    mode: Mode


@dataclass(frozen=True, slots=True)
class ChunkRow:
    """A 'snapshot_chunk' row: chunk `chunk` of snapshot `snapshot`, read in wave `wave`."""

    snapshot: str
    chunk: int
    wave: int


@dataclass(frozen=True, slots=True)
class BronzeSnapshotFacts:
    """The snapshot events and capture-instance switches recorded for one bronze."""

    completions: tuple[str, ...] = ()
    opens: tuple[OpenedSnapshot, ...] = ()
    chunks: tuple[ChunkRow, ...] = ()
    switches: tuple[tuple[str, str], ...] = field(default=())

    def newest_completion(self) -> str | None:
        """The highest max_lsn of the 'bootstrap' and 'resnapshot' rows, or None."""
        return max(self.completions, default=None)

    def is_open(self, lsn: str) -> bool:
        return not any(done >= lsn for done in self.completions)

    def whole_snapshot_counts(self, lsn: str) -> bool:
        """False while a full open at or below `lsn` is still open (an attempt with no event)."""
        return not any(
            o.mode == "full" and o.lsn <= lsn and self.is_open(o.lsn) for o in self.opens
        )

    def open_chunked(self) -> str | None:
        """The S of the newest chunked snapshot still open, or None."""
        return max(
            (o.lsn for o in self.opens if o.mode == "chunked" and self.is_open(o.lsn)),
            default=None,
        )

    def waves(self, snapshot: str) -> dict[int, list[int]]:
        """Wave number to its chunk numbers, for the chunk rows of `snapshot`."""
        waves: dict[int, list[int]] = {}
        for row in self.chunks:
            if row.snapshot == snapshot:
                waves.setdefault(row.wave, []).append(row.chunk)
        return {w: sorted(set(c)) for w, c in sorted(waves.items())}


def read_snapshot_facts(
    spark: SparkSession, facts_ref: str, bronze_ref: str
) -> BronzeSnapshotFacts:
    """Read the facts rows of `bronze_ref`; an absent table or pre-event shape reads as none.
    A path facts table is read in process (no Spark job)."""
    handle = open_for_read(spark, table_ref(facts_ref, argument="facts_table"), "facts")
    if handle is None:
        return BronzeSnapshotFacts()
    bronze = table_ref(bronze_ref, argument="bronze")
    columns = ("target", "event", "min_lsn", "max_lsn", "detail")
    try:
        import pyarrow.compute as pc

        where = pc.field("event").isin(list(_EVENTS))
        read = read_rows(handle.ref, columns=columns, where=where).to_pylist()
        rows = [tuple(r[c] for c in columns) for r in read]
    except TableOutOfReach:  # a catalog name, a path only Spark reads, or an older shape
        df = spark.table(handle.ref.sql)
        if "event" not in df.columns:
            return BronzeSnapshotFacts()
        detail = df["detail"] if "detail" in df.columns else None
        from pyspark.sql import functions as F

        rows = [
            tuple(r)
            for r in df.where(df["event"].isin(*_EVENTS))
            .select(
                "target",
                "event",
                "min_lsn",
                "max_lsn",
                (detail if detail is not None else F.lit(None)),
            )
            .collect()
        ]
    # Matched in Python: rows written under another spelling of the same table count too.
    named = {t: bronze.names(t) for t in {r[0] for r in rows}}
    return facts_from_rows(r[1:] for r in rows if named[r[0]])


def facts_from_rows(rows: Iterable[tuple[Any, ...]]) -> BronzeSnapshotFacts:
    """Build the view from (event, min_lsn, max_lsn, detail JSON) tuples of one bronze.

    A 'snapshot_open' without `detail.mode` is chunked (the pre-release shape, also
    `mode = "resnapshot"`), as docs/tables.md, '`detail` payloads', says readers default it.
    """
    completions: list[str] = []
    opens: list[OpenedSnapshot] = []
    chunks: list[ChunkRow] = []
    switches: list[tuple[str, str]] = []
    for event, min_lsn, max_lsn, raw in rows:
        payload = _detail(raw)
        if event in ("bootstrap", "resnapshot") and max_lsn:
            completions.append(max_lsn)
        elif event == "snapshot_open" and min_lsn:
            mode = payload.get("mode", "chunked")
            opens.append(OpenedSnapshot(min_lsn, "full" if mode == "full" else "chunked"))
        elif event == "snapshot_chunk" and isinstance(payload.get("snapshot"), str):
            chunks.append(
                ChunkRow(payload["snapshot"], int(payload["chunk"]), int(payload["wave"]))
            )
        elif event == "capture_instance_switched" and payload.get("old") and payload.get("new"):
            switches.append((str(payload["old"]), str(payload["new"])))
    return BronzeSnapshotFacts(tuple(completions), tuple(opens), tuple(chunks), tuple(switches))


def _detail(raw: object) -> Mapping[str, Any]:
    if not isinstance(raw, str):
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
