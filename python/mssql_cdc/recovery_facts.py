"""The stream family's rows in the facts table, as the recovery reads them.

Family membership is the equality test of spec 30 section 1 (`generation = 0 AND app_id = A`,
or `generation > 0 AND app_id = A || '.g' || generation`), never a pattern built from `A`. A
missing facts table reads as empty, so a dry run on a new stream needs none.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from mssql_cdc import _clock, tables
from mssql_cdc.lsn import Lsn
from mssql_cdc.offsets import StreamOffset, format_commit_ts
from mssql_cdc.payloads import read_open
from mssql_cdc.recovery import BatchSample, FamilyRows
from mssql_cdc.recovery_decision import CompletionRow, OpenRow

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = ["FactsFamily", "family_from_rows", "in_family_column"]

_SNAPSHOT_EVENTS = ("snapshot_open", "bootstrap", "resnapshot")
_FAMILY_COLUMNS = (
    "app_id",
    "generation",
    "event",
    "min_lsn",
    "max_lsn",
    "min_commit_ts",
    "max_commit_ts",
    "rows",
    "duration_ms",
    "detail",
    "written_at",
)


def _offset(lsn: str, at: datetime | None) -> StreamOffset:
    return StreamOffset(Lsn(lsn), format_commit_ts(at) or None)


def family_from_rows(rows: Iterable[Mapping[str, Any]]) -> FamilyRows:
    """Opens, completions and full-snapshot timings (newest first) from family facts rows."""
    opens: list[OpenRow] = []
    completions: list[CompletionRow] = []
    timed: list[tuple[datetime, int, int]] = []
    for row in rows:
        event, generation = row["event"], int(row["generation"])
        if event == "snapshot_open" and row["min_lsn"]:
            detail = read_open(row["detail"] or "{}")
            opens.append(
                OpenRow(
                    generation,
                    detail["mode"],
                    detail["kind"],
                    _offset(row["min_lsn"], row["min_commit_ts"]),
                )
            )
        elif event in ("bootstrap", "resnapshot") and row["max_lsn"]:
            completions.append(
                CompletionRow(generation, _offset(row["max_lsn"], row["max_commit_ts"]))
            )
            # A full snapshot's completion has no detail; a chunked one's names its chunks.
            if row["detail"] is None and row["rows"] is not None and row["duration_ms"]:
                timed.append((row["written_at"] or datetime.min, row["rows"], row["duration_ms"]))
    timed.sort(key=lambda t: t[0], reverse=True)
    return FamilyRows(
        tuple(opens), tuple(completions), tuple((rows_, ms) for _, rows_, ms in timed)
    )


def in_family_column(app_id: str) -> Column:
    from pyspark.sql import functions as F

    generation = F.col("generation")
    derived = F.concat(F.lit(f"{app_id}.g"), generation.cast("string"))
    return ((generation == 0) & (F.col("app_id") == F.lit(app_id))) | (
        (generation > 0) & (F.col("app_id") == derived)
    )


class FactsFamily:
    """The family queries of one stream on one facts table (None or "" for no table)."""

    def __init__(self, spark: SparkSession, facts_table: str | None, app_id: str) -> None:
        self._spark, self._facts, self._app_id = spark, facts_table, app_id

    def _facts_table(self) -> DataFrame | None:
        if not self._facts:
            return None
        ref = tables.table_ref(self._facts, argument="facts_table")
        return self._spark.table(ref.sql) if ref.exists(self._spark) else None

    def snapshot_rows(self) -> FamilyRows:
        """Opens, completions and full-snapshot timings of the family, in one query."""
        from pyspark.sql import functions as F

        df = self._facts_table()
        if df is None:
            return FamilyRows()
        rows = (
            df.where(F.col("event").isin(*_SNAPSHOT_EVENTS) & in_family_column(self._app_id))
            .select(*_FAMILY_COLUMNS)
            .collect()
        )
        return family_from_rows(r.asDict() for r in rows)

    def has_batches(self, sink_id: str) -> bool:
        """Whether the sink id wrote any micro-batch row (`event IS NULL`)."""
        from pyspark.sql import functions as F

        df = self._facts_table()
        if df is None:
            return False
        return bool(df.where(F.col("event").isNull() & (F.col("app_id") == sink_id)).take(1))

    def batch_samples(self, days: float = 7.0) -> tuple[BatchSample, ...]:
        """The family's micro-batch rows of the last `days`: headroom and retention figures."""
        from pyspark.sql import functions as F

        df = self._facts_table()
        if df is None:
            return ()
        since = _clock.now().replace(tzinfo=None) - timedelta(days=days)
        rows = (
            df.where(
                F.col("event").isNull()
                & in_family_column(self._app_id)
                & (F.col("written_at") >= F.lit(since))
            )
            .select(
                "written_at",
                "retention_headroom_hours",
                "source_max_commit_ts",
                "retention_watermark_ts",
            )
            .collect()
        )
        return tuple(BatchSample(r[0], r[1], r[2], r[3]) for r in rows if r[0] is not None)
