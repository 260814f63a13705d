"""The column lists of 20-sink-and-tables.md, typed out by hand as the tests' oracle.

Nothing here imports the library: a test compares what the library created with these.
"""

from __future__ import annotations

FACTS = [
    ("app_id", "string"),
    ("generation", "int"),
    ("batch_id", "bigint"),
    ("rows", "bigint"),
    ("min_lsn", "string"),
    ("max_lsn", "string"),
    ("min_commit_ts", "timestamp_ntz"),
    ("max_commit_ts", "timestamp_ntz"),
    ("deletes", "bigint"),
    ("inserts", "bigint"),
    ("updates", "bigint"),
    ("started_at", "timestamp_ntz"),
    ("duration_ms", "bigint"),
    ("read_seconds", "double"),
    ("read_mb", "double"),
    ("retention_watermark_ts", "timestamp_ntz"),
    ("retention_headroom_hours", "double"),
    ("event", "string"),
    ("lost_from_ts", "timestamp_ntz"),
    ("lost_to_ts", "timestamp_ntz"),
    ("source_max_commit_ts", "timestamp_ntz"),
    ("capture_lag_seconds", "double"),
    ("ingestion_lag_seconds", "double"),
    ("end_lsn", "string"),
    ("end_commit_ts", "timestamp_ntz"),
    ("detail", "string"),
    ("target", "string"),
    ("written_at", "timestamp_ntz"),
]

FACTS_V0 = [
    ("app_id", "string"),
    ("generation", "int"),
    ("batch_id", "bigint"),
    ("rows", "bigint"),
    ("min_lsn", "string"),
    ("max_lsn", "string"),
    ("min_commit_ts", "timestamp_ntz"),
    ("max_commit_ts", "timestamp_ntz"),
    ("deletes", "bigint"),
    ("inserts", "bigint"),
    ("updates", "bigint"),
    ("started_at", "timestamp_ntz"),
    ("duration_ms", "bigint"),
    ("target", "string"),
    ("written_at", "timestamp_ntz"),
]
# Facts columns a migration gives a new comment (6, 7, 8, 9, 10, 11 of the spec's table).
FACTS_RECOMMENTED = {
    "event",
    "batch_id",
    "rows",
    "min_lsn",
    "max_lsn",
    "detail",
    "lost_from_ts",
    "lost_to_ts",
}

CONTROL = [
    ("table_name", "string"),
    ("finalized_until", "timestamp_ntz"),
    ("end_lsn", "string"),
    ("end_commit_ts", "timestamp_ntz"),
    ("updated_at", "timestamp_ntz"),
    ("applied_lsn", "string"),
    ("snapshot_lsn", "string"),
    ("open_snapshot_lsn", "string"),
    ("snapshot_wave", "int"),
]
CONTROL_V0 = CONTROL[:5]
CONTROL_RECOMMENTED = {"finalized_until"}

BRONZE_OUTPUT = [
    ("_capture_instance", "string"),
    ("_start_lsn", "string"),
    ("_seqval", "string"),
    ("_operation", "int"),
    ("_command_id", "int"),
    ("_commit_ts", "timestamp_ntz"),
]
BRONZE_ADDED = [("_batch_id", "bigint"), ("_snapshot", "string"), ("_chunk", "int")]
BRONZE_RECOMMENTED = {"_start_lsn"}

MIGRATION_COUNTS = {"bronze": 1, "facts": 11, "control": 3, "silver": 0}
