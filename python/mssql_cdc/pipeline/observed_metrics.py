"""The stream's named observed metric `mssql_cdc`: each micro-batch's figures in Spark's own
streaming progress (decision 1382).

`to_delta` observes the streaming DataFrame before `writeStream`, so Spark folds the figures in
the tasks that read the batch for the sink's append (no job of its own) and publishes them as
`StreamingQueryProgress.observedMetrics["mssql_cdc"]`: in `query.lastProgress`, in a
`StreamingQueryListener`'s `onQueryProgress` and in the Spark UI. Each field bears the name of
the facts column it equals (docs/operations.md, 'In Spark's streaming progress').
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["OBSERVED_FIELDS", "OBSERVED_METRICS", "observed_stream"]

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
"""The observed metric's fields, in order; each equals the batch's facts column of its name."""


def observed_stream(df: DataFrame, generation: int) -> DataFrame:
    """The streaming DataFrame `df` observing `OBSERVED_METRICS`: the sink's batch aggregates
    and the generation, a literal the query carries for its whole life."""
    from pyspark.sql import functions as F

    from mssql_cdc.sink import aggregate_columns

    figures = [*aggregate_columns(), F.lit(generation).cast("int").alias("generation")]
    return df.observe(OBSERVED_METRICS, *figures)
