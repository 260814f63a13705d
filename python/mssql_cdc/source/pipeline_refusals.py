"""What a Spark Declarative Pipeline refuses while it runs a definition file, told apart from
every other error (decision 1425).

`spark-pipelines` runs a pipeline's Python files with `RuntimeConf.set` replaced by a method
that raises `SESSION_MUTATION_IN_DECLARATIVE_PIPELINE.SET_RUNTIME_CONF`, and its Spark Connect
server answers `spark.sql("EXPLAIN ...")` with `UNSUPPORTED_PIPELINE_SPARK_SQL_COMMAND`.
`register` skips the step such a refusal stops and goes on; any other error still propagates.
The error is read by its condition (`getCondition()` of PySpark's errors), so this module
imports no PySpark.
"""

from __future__ import annotations

__all__ = ["PIPELINE_REFUSALS", "refused_by_pipeline"]

# The two conditions, each with any sub-condition (`<condition>.<sub>`).
PIPELINE_REFUSALS = (
    "UNSUPPORTED_PIPELINE_SPARK_SQL_COMMAND",
    "SESSION_MUTATION_IN_DECLARATIVE_PIPELINE",
)


def refused_by_pipeline(error: BaseException) -> bool:
    """True when `error` is a pipeline definition's refusal of an `EXPLAIN` or a conf change:
    a PySpark error whose condition is one of `PIPELINE_REFUSALS` or a sub-condition of one."""
    get_condition = getattr(error, "getCondition", None)
    if not callable(get_condition):
        return False
    condition = get_condition()
    if not isinstance(condition, str):
        return False
    return any(condition == c or condition.startswith(c + ".") for c in PIPELINE_REFUSALS)
