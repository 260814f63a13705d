"""Spark's default parallelism, read the way classic and Spark Connect sessions both allow.

`SparkContext.defaultParallelism` exists only on a classic session; decision 0811 says why the
splits Spark plans for a `range` answer the same number on both. A Spark Declarative Pipeline's
definition file may not run `EXPLAIN`; there the answer is `spark.default.parallelism` or None
(decision 1425).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from mssql_cdc.source.pipeline_refusals import refused_by_pipeline

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["default_parallelism"]

_CONF = "spark.default.parallelism"
# EXPLAIN's physical plan names the splits of `range(1)`: `Range (0, 1, step=1, splits=4)`.
_SPLITS = re.compile(r"Range \(0, 1, step=1, splits=(?:Some\()?(\d+)")


def default_parallelism(spark: SparkSession) -> int | None:
    """Return `spark.default.parallelism` when set, else the splits Spark plans for a range
    without a partition count (the SparkContext's default parallelism); None when neither shows
    a positive number, or when a pipeline's definition file refuses the `EXPLAIN`. Runs no Spark
    job (EXPLAIN only plans)."""
    configured = spark.conf.get(_CONF, None)
    if configured is not None and configured.strip().isdigit() and int(configured) > 0:
        return int(configured)
    try:
        plan = spark.sql("EXPLAIN SELECT id FROM range(1)").collect()
    except Exception as error:
        if refused_by_pipeline(error):
            return None
        raise
    found = _SPLITS.search(str(plan[0][0])) if plan else None
    if found is None or int(found.group(1)) <= 0:
        return None
    return int(found.group(1))
