"""The stream's named observed metric `mssql_cdc`: each micro-batch's figures in Spark's own
streaming progress (decision 1382).

`to_delta` observes the streaming DataFrame before `writeStream`, so Spark folds the figures in
the tasks that read the batch for the sink's append (no job of its own) and publishes them as
`StreamingQueryProgress.observedMetrics["mssql_cdc"]`: in `query.lastProgress`, in a
`StreamingQueryListener`'s `onQueryProgress`. Each field bears the name of
the facts column it equals (docs/operations.md, 'In Spark's streaming progress').
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from mssql_cdc.errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = [
    "OBSERVED_FIELDS",
    "OBSERVED_METRICS",
    "observed_figures",
    "observed_stream",
    "progress_fields",
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
)
"""The observed metric's fields, in order; each equals the batch's facts column of its name,
the commit times as Spark's text of a TIMESTAMP_NTZ (`yyyy-MM-dd HH:mm:ss[.ffffff]`)."""


def observed_stream(df: DataFrame, generation: int) -> DataFrame:
    """The streaming DataFrame `df` observing `OBSERVED_METRICS`: the sink's batch aggregates,
    commit times as text (Spark Connect's progress carries no timestamp value), and the
    generation, a literal the query carries for its whole life."""
    from pyspark.sql import functions as F

    from mssql_cdc.sink import aggregate_columns

    figures = [
        *aggregate_columns(times_as_text=True),
        F.lit(generation).cast("int").alias("generation"),
    ]
    return df.observe(OBSERVED_METRICS, *figures)


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
