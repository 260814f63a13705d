"""Facts migrations. Base shape (version 0): `app_id`, `generation`, `batch_id`, `rows`,
`min_lsn`, `max_lsn`, `min_commit_ts`, `max_commit_ts`, `deletes`, `inserts`, `updates`,
`started_at`, `duration_ms`, `target`, `written_at`.

Numbers 3 (`snapshot_events`), 10 (`skipped_changes`) and 11 (`possible_skips`) record data
loss: the `resnapshot` event and its gap (docs/data-loss.md, 'What the facts table shows') and
certain and possible `data_skipped` rows (docs/sink.md, 'The facts row of a micro-batch').
Comment texts are frozen with their migration: a later meaning is a new step.
"""

from __future__ import annotations

from mssql_cdc.tables.migrations import Migration, NewColumn

__all__ = ["MIGRATIONS"]

MIGRATIONS: list[Migration] = [
    Migration(
        "read_metrics",
        adds=(
            NewColumn("read_seconds", "DOUBLE", "Summed partition read time, in task-seconds"),
            NewColumn(
                "read_mb",
                "DOUBLE",
                "Summed bytes read after the cast to the declared schema, in MB",
            ),
        ),
    ),
    Migration(
        "retention_headroom",
        adds=(
            NewColumn(
                "retention_watermark_ts",
                "TIMESTAMP_NTZ",
                "Commit time of the capture instance's min_lsn read after the batch's read: "
                "where CDC cleanup has reached, UTC",
            ),
            NewColumn(
                "retention_headroom_hours",
                "DOUBLE",
                "Hours left before CDC cleanup reaches the stream's end offset",
            ),
        ),
    ),
    Migration(
        "snapshot_events",
        adds=(
            NewColumn(
                "event",
                "STRING",
                "NULL for a micro-batch; 'bootstrap' for the initial snapshot, 'resnapshot' for "
                "the snapshot taken after a loss",
            ),
            NewColumn(
                "lost_from_ts",
                "TIMESTAMP_NTZ",
                "Start of the interval a resnapshot lost: commit time of the last processed "
                "offset, UTC",
            ),
            NewColumn(
                "lost_to_ts",
                "TIMESTAMP_NTZ",
                "End of the interval a resnapshot lost: commit time of min_lsn when the loss "
                "was found, UTC",
            ),
        ),
    ),
    Migration(
        "lag_metrics",
        adds=(
            NewColumn(
                "source_max_commit_ts",
                "TIMESTAMP_NTZ",
                "Commit time of the source's max_lsn read after the batch's read, UTC",
            ),
            NewColumn(
                "capture_lag_seconds",
                "DOUBLE",
                "How far SQL Server's capture is behind its own clock, in seconds",
            ),
            NewColumn(
                "ingestion_lag_seconds",
                "DOUBLE",
                "How far the stream is behind capture: source_max_commit_ts minus the end "
                "commit time",
            ),
        ),
    ),
    Migration(
        "end_offset",
        adds=(
            NewColumn(
                "end_lsn",
                "STRING",
                "LSN of the batch's end offset (largest range end); on events the event LSN",
            ),
            NewColumn("end_commit_ts", "TIMESTAMP_NTZ", "Commit time of end_lsn, UTC"),
        ),
    ),
    Migration(
        "source_events",
        adds=(
            NewColumn(
                "detail",
                "STRING",
                "JSON object describing the row: a batch's warnings (NULL without any), a "
                "schema change or a capture instance switch",
            ),
        ),
        comments={
            "event": "NULL for a micro-batch; else 'bootstrap' or 'resnapshot' (a complete "
            "snapshot), 'schema_change' or 'capture_instance_switched'",
            "batch_id": "Micro-batch id; also set on schema_change and capture_instance_switched "
            "rows (the batch that found them); NULL on snapshot events",
        },
    ),
    Migration(
        "chunked_snapshot_events",
        comments={
            "event": "NULL for a micro-batch; else 'bootstrap' or 'resnapshot' (a complete "
            "snapshot), 'snapshot_open' or 'snapshot_chunk' (chunked snapshot bookkeeping), "
            "'schema_change' or 'capture_instance_switched'",
            "rows": "Change rows written by the batch; snapshot rows on bootstrap and resnapshot "
            "(NULL when unknown or reused); chunk rows on snapshot_chunk; 0 on other events",
            "min_lsn": "Lowest _start_lsn of the batch's rows (NULL with 0 rows); on events the "
            "event LSN; on snapshot_chunk the wave's stamp",
            "max_lsn": "Highest _start_lsn of the batch's rows (NULL with 0 rows); on events the "
            "event LSN; on snapshot_chunk the source max_lsn read right after the chunk",
            "detail": "JSON object describing the row: a batch's warnings (NULL without any), a "
            "chunked snapshot's open, chunk or completion, a schema change or a capture "
            "instance switch",
        },
    ),
    Migration(
        "snapshot_plans_and_modes",
        comments={
            "event": "NULL for a micro-batch; else 'bootstrap' or 'resnapshot' (a complete "
            "snapshot), 'snapshot_open', 'snapshot_plan' or 'snapshot_chunk' (chunked "
            "snapshot bookkeeping), 'schema_change' or 'capture_instance_switched'",
            "detail": "JSON object describing the row: a batch's warnings (NULL without any), a "
            "snapshot's open (mode, kind), plan, chunk or completion, a schema change or a "
            "capture instance switch",
        },
    ),
    Migration(
        "full_snapshot_opens",
        comments={
            "event": "NULL for a micro-batch; else 'bootstrap' or 'resnapshot' (a complete "
            "snapshot, the only rows to rebuild from), 'snapshot_open', 'snapshot_plan', "
            "'snapshot_chunk' (snapshot bookkeeping, full or chunked), 'schema_change' or "
            "'capture_instance_switched'",
        },
    ),
    Migration(
        "skipped_changes",
        comments={
            "event": "NULL for a micro-batch; else 'bootstrap' or 'resnapshot' (a complete "
            "snapshot, the only rows to rebuild from), 'snapshot_open', 'snapshot_plan', "
            "'snapshot_chunk' (snapshot bookkeeping), 'schema_change', "
            "'capture_instance_switched', or 'data_skipped' (changes skipped with "
            "failOnDataLoss=false)",
            "lost_from_ts": "Start of a lost interval, UTC: on resnapshot and its snapshot_open "
            "the commit time of the last processed offset; on data_skipped the commit time of "
            "the batch's start offset",
            "lost_to_ts": "End of a lost interval, UTC: the commit time of min_lsn when the loss "
            "was found (resnapshot, snapshot_open) or of the LSN the stream resumed at "
            "(data_skipped)",
            "detail": "JSON object describing the row: a batch's warnings (NULL without any), a "
            "snapshot's open, plan, chunk or completion, a schema change, a capture instance "
            "switch, or a skip {from, to}",
            "batch_id": "Micro-batch id; also set on schema_change, capture_instance_switched "
            "and data_skipped rows (the batch that found them); NULL on snapshot events",
        },
        table_comment="mssql_cdc facts: one row per micro-batch, per snapshot event and per "
        "source event (schema changes, capture instance switches, skipped changes); event rows "
        "are state: never delete or update them",
    ),
    Migration(
        "possible_skips",
        comments={
            "event": "NULL for a micro-batch; else 'bootstrap' or 'resnapshot' (a complete "
            "snapshot, the only rows to rebuild from), 'snapshot_open', 'snapshot_plan', "
            "'snapshot_chunk' (snapshot bookkeeping), 'schema_change', "
            "'capture_instance_switched', or 'data_skipped' (changes skipped with "
            "failOnDataLoss=false: certain when planning skipped them, possible when a task "
            "found cleanup mid-read)",
            "lost_from_ts": "Start of a lost interval, UTC: on resnapshot and its snapshot_open "
            "the commit time of the last processed offset; on data_skipped, certain or "
            "possible, the commit time of the batch's start offset",
            "detail": "JSON object describing the row: a batch's warnings (NULL without any), a "
            "snapshot's open, plan, chunk or completion, a schema change, a capture instance "
            "switch, or a skip {from, to, certain, reason}",
        },
    ),
]
