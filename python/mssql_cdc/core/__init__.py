"""The core values: LSNs, offsets and ranges, the checkpoint toolkit's Python face, the
recovery decision's values, and the metrics and event file contract shared by source and sink."""

from __future__ import annotations

# Namespaces: `lsn.increment(x)` and `clock.now()` read better than bare names.
from mssql_cdc.core import clock, lsn
from mssql_cdc.core.app_id import validate_app_id
from mssql_cdc.core.batch_files import BatchFiles, plain_files, read_batch_files
from mssql_cdc.core.checkpoint import (
    STATE_FILE_NAME,
    GenerationPaths,
    GenerationState,
    check_checkpoint_path,
    has_metadata,
    last_processed_offset,
    live_paths,
    read_state,
    replace_state,
    spark_only,
)
from mssql_cdc.core.classpath import (
    JARS_ENV,
    DeltaClasspath,
    cached_jars,
    check_java,
    delta_classpath,
)
from mssql_cdc.core.events import EventRecord
from mssql_cdc.core.folders import check_cleanable_folder, check_inside
from mssql_cdc.core.generation_gc import MAX_KEEP, GcReport, collect_garbage
from mssql_cdc.core.lazy import lazy_names
from mssql_cdc.core.lsn import Lsn
from mssql_cdc.core.metrics_files import (
    EVENT_KINDS,
    EventJson,
    RangeMetrics,
    chunk_file_name,
    is_event_file,
    is_written_file,
    progress_file_name,
    range_file_name,
    write_json_atomic,
)
from mssql_cdc.core.names import did_you_mean
from mssql_cdc.core.offsets import LsnRange, Offset, StreamOffset, format_commit_ts, initial_lsn
from mssql_cdc.core.operation import Operation
from mssql_cdc.core.progress import Progress, Stage, Throughput, per_second, progress_of, report
from mssql_cdc.core.range_counts import RangeCounts
from mssql_cdc.core.ranges import (
    MIN_ROWS_PER_RANGE,
    Piece,
    Tile,
    TileSource,
    batch_ranges,
    cut_at_switch,
)
from mssql_cdc.core.recovery_decision import (
    CompletionRow,
    DecideInputs,
    Decision,
    DurationGuard,
    Estimate,
    Instance,
    Mode,
    Observation,
    OpenRow,
    StartInputs,
    StartResult,
    conclude,
    decide,
    error_from,
    estimate_snapshot,
    has_range,
    lock_violation,
    loss_after,
    resolve_start,
)
from mssql_cdc.core.row_digest import (
    MODULUS,
    NULL_FIELD,
    SEPARATOR,
    VALUE_MARK,
    TileDigest,
    digestible,
    row_digest,
    value_text,
)
from mssql_cdc.core.with_block import EndsWithBlock

__all__ = [
    "EVENT_KINDS",
    "JARS_ENV",
    "MAX_KEEP",
    "MIN_ROWS_PER_RANGE",
    "MODULUS",
    "NULL_FIELD",
    "SEPARATOR",
    "STATE_FILE_NAME",
    "VALUE_MARK",
    "BatchFiles",
    "CompletionRow",
    "DecideInputs",
    "Decision",
    "DeltaClasspath",
    "DurationGuard",
    "EndsWithBlock",
    "Estimate",
    "EventJson",
    "EventRecord",
    "GcReport",
    "GenerationPaths",
    "GenerationState",
    "Instance",
    "Lsn",
    "LsnRange",
    "Mode",
    "Observation",
    "Offset",
    "OpenRow",
    "Operation",
    "Piece",
    "Progress",
    "RangeCounts",
    "RangeMetrics",
    "Stage",
    "StartInputs",
    "StartResult",
    "StreamOffset",
    "Throughput",
    "Tile",
    "TileDigest",
    "TileSource",
    "batch_ranges",
    "cached_jars",
    "check_checkpoint_path",
    "check_cleanable_folder",
    "check_inside",
    "check_java",
    "chunk_file_name",
    "clock",
    "collect_garbage",
    "conclude",
    "cut_at_switch",
    "decide",
    "delta_classpath",
    "did_you_mean",
    "digestible",
    "error_from",
    "estimate_snapshot",
    "format_commit_ts",
    "has_metadata",
    "has_range",
    "initial_lsn",
    "is_event_file",
    "is_written_file",
    "last_processed_offset",
    "lazy_names",
    "live_paths",
    "lock_violation",
    "loss_after",
    "lsn",
    "per_second",
    "plain_files",
    "progress_file_name",
    "progress_of",
    "range_file_name",
    "read_batch_files",
    "read_state",
    "replace_state",
    "report",
    "resolve_start",
    "row_digest",
    "spark_only",
    "validate_app_id",
    "value_text",
    "write_json_atomic",
]
