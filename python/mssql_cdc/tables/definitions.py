"""The newest shape of every table kind: columns in creation order, Spark SQL types, comments.

Only what a new table is created with lives here. Older shapes exist only as the migrations in
`mssql_cdc.tables.migrations`, whose literal comment texts a unit test compares with these.
Bronze and silver also hold the captured columns of their source, which come from the stream's
schema at creation; the lists below are the library's own columns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "BRONZE_ADDED",
    "BRONZE_COMMENT",
    "BRONZE_OUTPUT",
    "CONTROL",
    "CONTROL_COMMENT",
    "FACTS",
    "FACTS_COMMENT",
    "KINDS",
    "KIND_PROPERTY",
    "SILVER_COMMENT",
    "SILVER_LIBRARY",
    "Column",
    "TableKind",
    "library_columns",
]

TableKind = Literal["bronze", "facts", "control", "silver"]
KINDS: tuple[TableKind, ...] = ("bronze", "facts", "control", "silver")
KIND_PROPERTY = "mssql_cdc.kind"  # the table property naming a library table's kind


@dataclass(frozen=True, slots=True)
class Column:
    """One library column: its name, Spark SQL type and the comment stored on it."""

    name: str
    type: str
    comment: str


BRONZE_COMMENT = "mssql_cdc bronze: change rows and snapshots of one source table, append-only"

# The stream's output columns, before the captured ones; `_command_id` is absent when the source
# runs with includeCommandId=false, so bronze takes it only when the stream's schema has it.
BRONZE_OUTPUT: tuple[Column, ...] = (
    Column(
        "_capture_instance",
        "STRING",
        "Capture instance the row was read from, or the snapshot was taken for",
    ),
    Column(
        "_start_lsn",
        "STRING",
        "Commit LSN of the change, shared by a transaction's rows; the snapshot LSN S on whole "
        "snapshot rows; the wave's stamp L (L >= S) on chunk rows",
    ),
    Column(
        "_seqval",
        "STRING",
        "Sequence of the change within its commit (tie-breaker); NULL on snapshot rows",
    ),
    Column(
        "_operation",
        "INT",
        "1 delete, 2 insert, 3 update before-image, 4 update after-image, 0 snapshot row",
    ),
    Column(
        "_command_id",
        "INT",
        "Command number within the commit, per capture instance; NULL on snapshot rows",
    ),
    Column("_commit_ts", "TIMESTAMP_NTZ", "Commit time of _start_lsn, UTC"),
)

# Added by the library after the captured columns.
BRONZE_ADDED: tuple[Column, ...] = (
    Column("_batch_id", "BIGINT", "Micro-batch id that wrote the row; NULL on snapshot rows"),
    Column(
        "_snapshot",
        "STRING",
        "Snapshot LSN S of a snapshot row (equal to _start_lsn on whole snapshot rows); NULL on "
        "change rows",
    ),
    Column(
        "_chunk",
        "INT",
        "Chunk number (0-based) of a chunked snapshot row; NULL on change and whole snapshot rows",
    ),
)

FACTS_COMMENT = (
    "mssql_cdc facts: one row per micro-batch, per snapshot event and per source event "
    "(schema changes, capture instance switches, skipped changes); event rows are state: "
    "never delete or update them"
)

_EVENT = (
    "NULL for a micro-batch; else 'bootstrap' or 'resnapshot' (a complete snapshot, the only "
    "rows to rebuild from), 'snapshot_open', 'snapshot_plan', 'snapshot_chunk' (snapshot "
    "bookkeeping), 'schema_change', 'capture_instance_switched', or 'data_skipped' (changes "
    "skipped with failOnDataLoss=false: certain when planning skipped them, possible when a "
    "task found cleanup mid-read)"
)
_LOST_FROM = (
    "Start of a lost interval, UTC: on resnapshot and its snapshot_open the commit time of the "
    "last processed offset; on data_skipped, certain or possible, the commit time of the "
    "batch's start offset"
)
_LOST_TO = (
    "End of a lost interval, UTC: the commit time of min_lsn when the loss was found "
    "(resnapshot, snapshot_open) or of the LSN the stream resumed at (data_skipped)"
)
_DETAIL = (
    "JSON object describing the row: a batch's warnings (NULL without any), a snapshot's "
    "open, plan, chunk or completion, a schema change, a capture instance switch, or a skip "
    "{from, to, certain, reason}"
)
_BATCH_ID = (
    "Micro-batch id; also set on schema_change, capture_instance_switched and data_skipped "
    "rows (the batch that found them); NULL on snapshot events"
)
_ROWS = (
    "Change rows written by the batch; snapshot rows on bootstrap and resnapshot (NULL when "
    "unknown or reused); chunk rows on snapshot_chunk; 0 on other events"
)
_MIN_LSN = (
    "Lowest _start_lsn of the batch's rows (NULL with 0 rows); on events the event LSN; on "
    "snapshot_chunk the wave's stamp"
)
_MAX_LSN = (
    "Highest _start_lsn of the batch's rows (NULL with 0 rows); on events the event LSN; on "
    "snapshot_chunk the source max_lsn read right after the chunk"
)

FACTS: tuple[Column, ...] = (
    Column("app_id", "STRING", "Sink id of the stream that wrote the row: A, or A.g<n>"),
    Column("generation", "INT", "Checkpoint generation of that sink id; 0 for hand-wired sinks"),
    Column("batch_id", "BIGINT", _BATCH_ID),
    Column("rows", "BIGINT", _ROWS),
    Column("min_lsn", "STRING", _MIN_LSN),
    Column("max_lsn", "STRING", _MAX_LSN),
    Column("min_commit_ts", "TIMESTAMP_NTZ", "Commit time of min_lsn, UTC"),
    Column("max_commit_ts", "TIMESTAMP_NTZ", "Commit time of max_lsn, UTC"),
    Column("deletes", "BIGINT", "Rows with _operation 1 (delete); NULL on events"),
    Column("inserts", "BIGINT", "Rows with _operation 2 (insert); NULL on events"),
    Column("updates", "BIGINT", "Rows with _operation 4 (update after-image); NULL on events"),
    Column(
        "started_at",
        "TIMESTAMP_NTZ",
        "When the sink entered the batch, or the snapshot, planning or wave began, UTC",
    ),
    Column(
        "duration_ms",
        "BIGINT",
        "Milliseconds from entering the batch to its facts commit; a full snapshot's read and "
        "write; the planning on snapshot_plan; NULL on other events",
    ),
    Column("read_seconds", "DOUBLE", "Summed partition read time, in task-seconds"),
    Column("read_mb", "DOUBLE", "Summed bytes read after the cast to the declared schema, in MB"),
    Column(
        "retention_watermark_ts",
        "TIMESTAMP_NTZ",
        "Commit time of the capture instance's min_lsn read after the batch's read: where CDC "
        "cleanup has reached, UTC",
    ),
    Column(
        "retention_headroom_hours",
        "DOUBLE",
        "Hours left before CDC cleanup reaches the stream's end offset",
    ),
    Column("event", "STRING", _EVENT),
    Column("lost_from_ts", "TIMESTAMP_NTZ", _LOST_FROM),
    Column("lost_to_ts", "TIMESTAMP_NTZ", _LOST_TO),
    Column(
        "source_max_commit_ts",
        "TIMESTAMP_NTZ",
        "Commit time of the source's max_lsn read after the batch's read, UTC",
    ),
    Column(
        "capture_lag_seconds",
        "DOUBLE",
        "How far SQL Server's capture is behind its own clock, in seconds",
    ),
    Column(
        "ingestion_lag_seconds",
        "DOUBLE",
        "How far the stream is behind capture: source_max_commit_ts minus the end commit time",
    ),
    Column(
        "end_lsn",
        "STRING",
        "LSN of the batch's end offset (largest range end); on events the event LSN",
    ),
    Column("end_commit_ts", "TIMESTAMP_NTZ", "Commit time of end_lsn, UTC"),
    Column("detail", "STRING", _DETAIL),
    Column("target", "STRING", "The target table exactly as the caller passed it"),
    Column(
        "written_at",
        "TIMESTAMP_NTZ",
        "When the row was committed, after the target commit, UTC",
    ),
)

CONTROL_COMMENT = (
    "mssql_cdc control: one row per table name: its completeness verdict and, for silver, "
    "its position in bronze"
)

CONTROL: tuple[Column, ...] = (
    Column("table_name", "STRING", "Exact table string passed to advance, or the silver target"),
    Column(
        "finalized_until",
        "TIMESTAMP_NTZ",
        "The verdict, UTC: every period ending at or before it is complete; never decreases. "
        "Over a loss gap it means nothing more will arrive for those periods, not that the "
        "gap's changes are in the table",
    ),
    Column("end_lsn", "STRING", "End offset LSN that last moved the verdict"),
    Column(
        "end_commit_ts",
        "TIMESTAMP_NTZ",
        "Commit time of end_lsn, UTC; the verdict is it truncated to the granularity",
    ),
    Column("updated_at", "TIMESTAMP_NTZ", "Last write of the row, UTC"),
    Column("applied_lsn", "STRING", "Silver: highest bronze change LSN applied"),
    Column("snapshot_lsn", "STRING", "Silver: LSN of the snapshot it was last rebuilt from"),
    Column(
        "open_snapshot_lsn",
        "STRING",
        "Silver: S of the open chunked snapshot whose waves are being applied, else NULL",
    ),
    Column("snapshot_wave", "INT", "Silver: last wave of that snapshot applied, else NULL"),
)

SILVER_COMMENT = "mssql_cdc silver: the current row of each key of one source table"

SILVER_LIBRARY: tuple[Column, ...] = (
    Column(
        "_start_lsn",
        "STRING",
        "LSN of the row's current image; the snapshot's LSN if unchanged since",
    ),
    Column("_commit_ts", "TIMESTAMP_NTZ", "Commit time of _start_lsn, UTC"),
)


def library_columns(kind: TableKind) -> tuple[Column, ...]:
    """Return every column the library defines for `kind` (bronze: output, then added)."""
    if kind == "bronze":
        return BRONZE_OUTPUT + BRONZE_ADDED
    if kind == "facts":
        return FACTS
    if kind == "control":
        return CONTROL
    return SILVER_LIBRARY
