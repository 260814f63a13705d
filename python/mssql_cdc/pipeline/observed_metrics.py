"""The stream's named observed metric `mssql_cdc`: each micro-batch's figures in Spark's own
streaming progress (decision 1382).

`to_delta` observes the streaming DataFrame before `writeStream`, so Spark folds the figures in
the tasks that read the batch for the sink's append (no job of its own) and publishes them as
`StreamingQueryProgress.observedMetrics["mssql_cdc"]`: in `query.lastProgress`, in a
`StreamingQueryListener`'s `onQueryProgress`. Each field bears the name of
the facts column it equals (docs/operations.md, 'In Spark's streaming progress').

The figures only a range's task learns (its end's commit time, the retention watermark, the
source's newest commit, the events) reach the metric as one trailing row per task in the
hidden column `FIGURES_COLUMN`; the headroom and lags are folded from them here with the facts
table's formulas, and the rows are dropped before the sink (`without_figures`, decision 1391).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from mssql_cdc.core import FIGURES_COLUMN
from mssql_cdc.errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = [
    "OBSERVED_FIELDS",
    "OBSERVED_METRICS",
    "observed_figures",
    "observed_stream",
    "progress_fields",
    "without_figures",
]

OBSERVED_METRICS: Final = "mssql_cdc"
"""The name of the observed metric in each progress of a `to_delta` query."""

OBSERVED_FIELDS: Final = (
    "rows",
    "min_lsn",
    "max_lsn",
    "min_commit_ts",
    "max_commit_ts",
    "deletes",
    "inserts",
    "updates",
    "generation",
    "end_lsn",
    "retention_headroom_hours",
    "ingestion_lag_seconds",
    "capture_lag_seconds",
    "events",
)
"""The observed metric's fields, in order; each but `events` equals the batch's facts column of
its name, the commit times as Spark's text of a TIMESTAMP_NTZ (`yyyy-MM-dd HH:mm:ss[.ffffff]`).
`events` names, comma-joined in order of name, the facts events of the batch: its source events
(`capture_instance_switched`, `data_skipped`, `schema_change`) and, on the first batch that
reads from the snapshot's LSN (the generation's first with an `end_lsn`), the snapshot that
opened the generation (`bootstrap` or `resnapshot`); NULL when none."""

_MICROS_PER_HOUR: Final = 3_600_000_000
_MICROS_PER_SECOND: Final = 1_000_000


def observed_stream(
    df: DataFrame, generation: int, opened_by: tuple[str, str] | None = None
) -> DataFrame:
    """The streaming DataFrame `df` observing `OBSERVED_METRICS`: the sink's batch aggregates,
    commit times as text (Spark Connect's progress carries no timestamp value), the generation,
    a literal the query carries for its whole life, and the figures of `df`'s
    `FIGURES_COLUMN` rows folded as the facts row folds the metrics files.

    Args:
        df: the `mssql_cdc` source's stream with the batch figures on.
        generation: the checkpoint generation the query runs in.
        opened_by: (`bootstrap` or `resnapshot`, the snapshot's LSN) when a snapshot opened the
            generation: the batch whose ranges start at that LSN names it in `events` (a
            batch with nothing to read has no ranges, so the next one does).
    """
    from pyspark.sql import functions as F

    from mssql_cdc.sink import aggregate_columns

    figures = F.col(FIGURES_COLUMN)
    to_lsn = figures.getField("to_lsn")

    def newest(field: str) -> Column:
        return F.max(figures.getField(field).cast("timestamp_ntz"))

    # E: the end offset's commit time (the range ending highest), else the newest row's
    end = F.coalesce(
        F.max_by(figures.getField("to_commit_ts"), to_lsn).cast("timestamp_ntz"),
        F.max("_commit_ts"),
    )
    found = F.flatten(F.collect_list(F.split(figures.getField("events"), ",")))
    no_events = F.array().cast("array<string>")
    opening = no_events
    if opened_by is not None:
        event, at = opened_by
        starts = F.min(figures.getField("batch_start_lsn"))
        opening = F.when(starts == F.lit(at), F.array(F.lit(event))).otherwise(no_events)
    events = F.array_join(F.array_sort(F.array_distinct(F.concat(opening, found))), ",")
    columns = [
        *aggregate_columns(times_as_text=True, rows_of=figures.isNull()),
        F.lit(generation).cast("int").alias("generation"),
        F.max(to_lsn).alias("end_lsn"),
        _rounded(newest("retention_watermark_ts"), end, _MICROS_PER_HOUR, 2).alias(
            "retention_headroom_hours"
        ),
        _rounded(end, newest("source_max_commit_ts"), _MICROS_PER_SECOND, 3).alias(
            "ingestion_lag_seconds"
        ),
        F.max(figures.getField("capture_lag_seconds")).alias("capture_lag_seconds"),
        F.nullif(events, F.lit("")).alias("events"),
    ]
    return df.observe(OBSERVED_METRICS, *columns)


def without_figures(df: DataFrame) -> DataFrame:
    """A micro-batch of the observed stream as the sink takes it: the change rows alone,
    without `FIGURES_COLUMN` (a narrow filter and projection in the batch's one read)."""
    from pyspark.sql import functions as F

    if FIGURES_COLUMN not in df.columns:
        return df
    return df.where(F.col(FIGURES_COLUMN).isNull()).drop(FIGURES_COLUMN)


def _rounded(earlier: Column, later: Column, unit: int, scale: int) -> Column:
    """(later - earlier) in `unit` microseconds, rounded half-up to `scale` decimals, as the
    facts table's formulas round: exact microseconds divided as decimals, so no double rounds
    first (the divisor's decimal keeps 11 or 8 digits of scale, which no tie is nearer than)."""
    from pyspark.sql import functions as F

    micros = F.timestamp_diff("MICROSECOND", earlier, later).cast("decimal(20,0)")
    divisor = F.lit(unit).cast(f"decimal({len(str(unit))},0)")
    return F.round(micros / divisor, scale).cast("double")


def observed_figures(progress: Any) -> dict[str, Any] | None:
    """The `mssql_cdc` figures of one progress of a streaming query, by field name; None when
    it holds none (an idle trigger's progress, another query's).

    Args:
        progress: a `StreamingQueryProgress` (a listener's `event.progress`,
            `query.lastProgress`), its `json` text, or that JSON as a mapping. Spark Connect
            writes an observed row as `{"values": [...], "schema": {...}}`; both forms are read.
    Raises:
        ConfigError (a ValueError): `progress` is none of those.
    """
    metrics = progress_fields(progress).get("observedMetrics") or {}
    row = _plain(metrics.get(OBSERVED_METRICS))
    if not isinstance(row, Mapping):
        return None
    values, schema = row.get("values"), row.get("schema")
    if set(row) == {"values", "schema"} and isinstance(values, list | tuple):
        fields = schema.get("fields") if isinstance(schema, Mapping) else None
        names = [str(f.get("name")) for f in fields or () if isinstance(f, Mapping)]
        if len(names) != len(values):
            return None
        return dict(zip(names, values, strict=True))
    return dict(row)


def progress_fields(progress: Any) -> Mapping[str, Any]:
    """A progress's fields by name: `id`, `name`, `batchId`, `timestamp`, `observedMetrics`...

    Raises:
        ConfigError (a ValueError): `progress` is not a progress, its JSON or its mapping.
    """
    if isinstance(progress, str):
        try:
            progress = json.loads(progress)
        except ValueError as exc:
            raise ConfigError(
                f"progress is text but not JSON ({exc}); pass a StreamingQueryProgress, its "
                "`json` or `query.lastProgress`"
            ) from exc
    if isinstance(progress, Mapping):
        return progress
    if hasattr(progress, "observedMetrics") and hasattr(progress, "batchId"):
        return {
            name: getattr(progress, name, None)
            for name in ("id", "name", "batchId", "timestamp", "observedMetrics")
        }
    raise ConfigError(
        f"progress is a {type(progress).__name__}; pass a StreamingQueryProgress (a listener's "
        "event.progress), its `json` or `query.lastProgress`"
    )


def _plain(value: Any) -> Any:
    """A pyspark Row as a dict, nested rows too; anything else as it is."""
    as_dict = getattr(value, "asDict", None)
    return as_dict(recursive=True) if callable(as_dict) else value
