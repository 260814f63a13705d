"""Facts rows as typed values, their Spark rows, and their idempotent append.

A `FactsRow` holds every facts column in creation order; the builders below (micro-batch and
source events) and in `facts.snapshot_rows` (snapshot events) fill exactly the columns each kind of
row has (docs/tables.md, 'Rows as values'). `append_facts` writes a list of rows in one Delta
commit under its transaction key (docs/tables.md, 'Idempotency keys'), so a repeat writes
nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import astuple, dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from mssql_cdc.core import EVENT_KINDS, EventRecord
from mssql_cdc.errors import ConfigError, InternalError
from mssql_cdc.facts.detail_payloads import (
    BatchCommitMetadata,
    FactsCommitMetadata,
    parse_time,
    to_json,
)
from mssql_cdc.facts.keys import TxnKey, sink_id, validate_app_id
from mssql_cdc.facts.metrics import (
    FoldedMetrics,
    effective_end,
    ingestion_lag_seconds,
    retention_headroom_hours,
)
from mssql_cdc.tables import (
    FACTS,
    TableOutOfReach,
    TableRef,
    append,
    append_idempotent,
    append_rows,
    columns_of,
    open_for_read,
    read_rows,
    sql_string,
    table_ref,
    writes_in_process,
)

if TYPE_CHECKING:
    import pyarrow.compute as pc
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

__all__ = [
    "SOURCE_EVENTS",
    "BatchAggregates",
    "FactsRow",
    "append_facts",
    "batch_commit_metadata",
    "batch_facts_metadata",
    "batch_row",
    "distinct_events",
    "facts_dataframe",
    "facts_schema",
    "family_condition",
    "family_filter",
    "last_batch",
    "source_event_row",
    "source_event_rows",
]

log = logging.getLogger(__name__)

SOURCE_EVENTS = EVENT_KINDS


@dataclass(frozen=True, slots=True)
class FactsRow:
    """One facts row; fields in the order of a newly created facts table."""

    app_id: str
    generation: int
    batch_id: int | None = None
    rows: int | None = None
    min_lsn: str | None = None
    max_lsn: str | None = None
    min_commit_ts: datetime | None = None
    max_commit_ts: datetime | None = None
    deletes: int | None = None
    inserts: int | None = None
    updates: int | None = None
    started_at: datetime | None = None
    duration_ms: int | None = None
    read_seconds: float | None = None
    read_mb: float | None = None
    retention_watermark_ts: datetime | None = None
    retention_headroom_hours: float | None = None
    event: str | None = None
    lost_from_ts: datetime | None = None
    lost_to_ts: datetime | None = None
    source_max_commit_ts: datetime | None = None
    capture_lag_seconds: float | None = None
    ingestion_lag_seconds: float | None = None
    end_lsn: str | None = None
    end_commit_ts: datetime | None = None
    detail: str | None = None
    target: str | None = None
    written_at: datetime | None = None

    def as_tuple(self) -> tuple[Any, ...]:
        return astuple(self)


@dataclass(frozen=True, slots=True)
class BatchAggregates:
    """Step 5 of the sink: the micro-batch's aggregates, observed on its append."""

    rows: int
    min_lsn: str | None
    max_lsn: str | None
    min_commit_ts: datetime | None
    max_commit_ts: datetime | None
    deletes: int
    inserts: int
    updates: int


def batch_commit_metadata(*, app_id: str, generation: int, batch_id: int) -> BatchCommitMetadata:
    """The `userMetadata` of a micro-batch's bronze commit (docs/sink.md step 6): it names the
    batch; its counts are in its facts row, known only after the append."""
    return {"batch_id": batch_id, "app_id": sink_id(app_id, generation), "generation": generation}


def batch_facts_metadata(*, app_id: str, generation: int, batch_id: int) -> FactsCommitMetadata:
    """The `userMetadata` of a micro-batch's facts commit (its row and its source events)."""
    return {"facts": "batch", "app_id": sink_id(app_id, generation), "batch_id": batch_id}


def facts_schema() -> StructType:
    """The facts table's Spark schema in creation order (built without a JVM)."""
    from pyspark.sql.types import (
        DoubleType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
        TimestampNTZType,
    )

    spark_types = {
        "STRING": StringType(),
        "INT": IntegerType(),
        "BIGINT": LongType(),
        "DOUBLE": DoubleType(),
        "TIMESTAMP_NTZ": TimestampNTZType(),
    }
    return StructType([StructField(c.name, spark_types[c.type], True) for c in FACTS])


def facts_dataframe(spark: SparkSession, rows: Sequence[FactsRow]) -> DataFrame:
    """Return the rows as a DataFrame with the facts schema."""
    return spark.createDataFrame([r.as_tuple() for r in rows], schema=facts_schema())


def append_facts(
    spark: SparkSession,
    facts_table: TableRef | str,
    rows: Sequence[FactsRow],
    *,
    key: TxnKey | None,
    user_metadata: FactsCommitMetadata | None = None,
) -> None:
    """Append `rows` in one facts commit, under `key` (None: no key, e.g. a full open).

    `user_metadata` marks a micro-batch's commit (`batch_facts_metadata`); no other write
    carries one, and one that carries it holds no snapshot event.

    The facts table must exist and have been opened for write (migrated); facts change shape
    only by migration, so a column the table lacks is a ConfigError before anything is written.
    Nothing is written for an empty list.
    """
    if not rows:
        return
    ref = table_ref(facts_table, argument="facts_table")
    if user_metadata is not None and any(r.event not in (None, *SOURCE_EVENTS) for r in rows):
        raise InternalError(
            f"{ref}: a micro-batch's facts commit was given a row that is neither its batch row "
            "nor a source event"
        )
    metadata = None if user_metadata is None else dict(user_metadata)
    if writes_in_process(ref):
        try:
            _check_facts_columns(ref, columns_of(ref))
            names = [c.name for c in FACTS]
            append_rows(
                ref,
                [dict(zip(names, r.as_tuple(), strict=True)) for r in rows],
                key=None if key is None else (key.app_id, key.version),
                user_metadata=metadata,
            )
            return
        except TableOutOfReach as exc:  # nothing committed: Spark appends under the same key
            log.debug("%s: the facts commit goes through Spark: %s", ref, exc)
    _check_facts_columns(ref, spark.table(ref.sql).columns)
    df = facts_dataframe(spark, rows)
    if key is None:
        append(df, ref, user_metadata=metadata)
    else:
        append_idempotent(df, ref, key.app_id, key.version, metadata)


def _check_facts_columns(ref: TableRef, columns: Sequence[str]) -> None:
    present = {name.lower() for name in columns}
    missing = [c.name for c in FACTS if c.name.lower() not in present]
    if missing:
        raise ConfigError(
            f"{ref}: the facts table lacks the columns {', '.join(missing)}; open it for write "
            "first (tables.ensure_table(..., 'facts')) so its migrations run"
        )


def batch_row(
    *,
    app_id: str,
    generation: int,
    batch_id: int,
    target: str,
    aggregates: BatchAggregates,
    metrics: FoldedMetrics | None,
    started_at: datetime,
    duration_ms: int,
    written_at: datetime,
) -> FactsRow:
    """The micro-batch row (`event` NULL); metric columns NULL when `metrics` is None."""
    folded = metrics or FoldedMetrics()
    end = effective_end(folded.end_commit_ts, aggregates.max_commit_ts)
    return FactsRow(
        app_id=sink_id(app_id, generation),
        generation=generation,
        batch_id=batch_id,
        rows=aggregates.rows,
        min_lsn=aggregates.min_lsn,
        max_lsn=aggregates.max_lsn,
        min_commit_ts=aggregates.min_commit_ts,
        max_commit_ts=aggregates.max_commit_ts,
        deletes=aggregates.deletes,
        inserts=aggregates.inserts,
        updates=aggregates.updates,
        started_at=started_at,
        duration_ms=duration_ms,
        read_seconds=folded.read_seconds,
        read_mb=folded.read_mb,
        retention_watermark_ts=folded.retention_watermark_ts,
        retention_headroom_hours=retention_headroom_hours(end, folded.retention_watermark_ts),
        source_max_commit_ts=folded.source_max_commit_ts,
        capture_lag_seconds=folded.capture_lag_seconds,
        ingestion_lag_seconds=ingestion_lag_seconds(folded.source_max_commit_ts, end),
        end_lsn=folded.end_lsn,
        end_commit_ts=folded.end_commit_ts,
        detail=to_json({"warnings": list(folded.warnings)}) if folded.warnings else None,
        target=target,
        written_at=written_at,
    )


def source_event_row(
    record: EventRecord,
    *,
    app_id: str,
    generation: int,
    batch_id: int,
    target: str,
    started_at: datetime,
    written_at: datetime,
) -> FactsRow:
    """An event the reader found (`schema_change`, `capture_instance_switched`, `data_skipped`),
    as a row of the batch that found it.

    Raises:
        InternalError: the record's event is not one of those three (the reader of event
            files refuses any other).
    """
    event = record.event
    if event not in SOURCE_EVENTS:
        raise InternalError(
            f"event record {event!r} is not a source event; expected one of "
            f"{', '.join(sorted(SOURCE_EVENTS))}"
        )
    at = parse_time(record.commit_ts)
    skipped = event == "data_skipped"
    return FactsRow(
        app_id=sink_id(app_id, generation),
        generation=generation,
        batch_id=batch_id,
        rows=0,
        min_lsn=record.lsn,
        max_lsn=record.lsn,
        min_commit_ts=at,
        max_commit_ts=at,
        started_at=started_at,
        event=event,
        lost_from_ts=parse_time(record.lost_from_ts) if skipped else None,
        lost_to_ts=parse_time(record.lost_to_ts) if skipped else None,
        end_lsn=record.lsn,
        end_commit_ts=at,
        detail=to_json(record.detail),
        target=target,
        written_at=written_at,
    )


def source_event_rows(
    records: Sequence[EventRecord],
    *,
    app_id: str,
    generation: int,
    batch_id: int,
    target: str,
    started_at: datetime,
    written_at: datetime,
) -> list[FactsRow]:
    """The event rows of one batch's records (`source_event_row` each), distinct; a record
    whose times cannot be read is skipped with a warning, as its file carries nothing else."""
    rows: list[FactsRow] = []
    for record in records:
        try:
            rows.append(
                source_event_row(
                    record,
                    app_id=app_id,
                    generation=generation,
                    batch_id=batch_id,
                    target=target,
                    started_at=started_at,
                    written_at=written_at,
                )
            )
        except ValueError as exc:
            log.warning("%s: event record %r skipped: %s", target, record.event, exc)
    return distinct_events(rows)


def distinct_events(rows: Sequence[FactsRow]) -> list[FactsRow]:
    """Collapse event rows with the same (`event`, `min_lsn`, `detail`), keeping the first."""
    seen: set[tuple[str | None, str | None, str | None]] = set()
    kept: list[FactsRow] = []
    for row in rows:
        identity = (row.event, row.min_lsn, row.detail)
        if identity not in seen:
            seen.add(identity)
            kept.append(row)
    return kept


def family_condition(app_id: str) -> str:
    """A SQL condition selecting the stream family of `app_id`: generation 0 rows of `A` and
    generation n > 0 rows of `A.g<n>`; exact equalities, no pattern matching."""
    literal = sql_string(validate_app_id(app_id))
    return (
        f"((generation = 0 AND app_id = {literal}) OR "
        f"(generation > 0 AND app_id = concat({literal}, '.g', CAST(generation AS STRING))))"
    )


def family_filter(app_id: str) -> pc.Expression:
    """`family_condition` as an Arrow filter, for the facts table read in process: the same two
    equalities, NULLs keeping no row as in SQL."""
    import pyarrow as pa
    import pyarrow.compute as pc

    name = validate_app_id(app_id)
    generation, written = pc.field("generation"), pc.field("app_id")
    suffixed = pc.binary_join_element_wise(
        pc.scalar(name), pc.scalar(".g"), generation.cast(pa.string()), pc.scalar("")
    )
    return ((generation == 0) & (written == name)) | ((generation > 0) & (written == suffixed))


def last_batch(
    spark: SparkSession, facts_table: TableRef | str, sink: str
) -> tuple[int, str | None] | None:
    """The newest micro-batch row of a sink id: (`batch_id`, `end_lsn`); None without one or
    without the table (sink step 1)."""
    handle = open_for_read(spark, facts_table, "facts")
    if handle is None:
        return None
    try:
        import pyarrow.compute as pc

        where = (
            (pc.field("app_id") == sink)
            & pc.field("event").is_null()
            & pc.field("batch_id").is_valid()
        )
        found = read_rows(handle.ref, columns=("batch_id", "end_lsn"), where=where).to_pylist()
        newest = max(found, key=lambda r: int(r["batch_id"]), default=None)
        return None if newest is None else (int(newest["batch_id"]), newest["end_lsn"])
    except TableOutOfReach:
        pass  # a catalog name, or a path only Spark reads
    rows = (
        spark.table(handle.ref.sql)
        .where(f"app_id = {sql_string(sink)} AND event IS NULL AND batch_id IS NOT NULL")
        .orderBy("batch_id", ascending=False)
        .select("batch_id", "end_lsn")
        .limit(1)
        .collect()
    )
    return (int(rows[0]["batch_id"]), rows[0]["end_lsn"]) if rows else None
