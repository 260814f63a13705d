"""`register` inside a Spark Declarative Pipeline's definition file, without a JVM.

The refusals are PySpark's own: `spark-pipelines` runs a definition file inside
`pyspark.pipelines.block_session_mutations()`, which replaces `RuntimeConf.set` with a method
raising `SESSION_MUTATION_IN_DECLARATIVE_PIPELINE.SET_RUNTIME_CONF`, and its Spark Connect
server answers `EXPLAIN` with `UNSUPPORTED_PIPELINE_SPARK_SQL_COMMAND` (Spark's
error-conditions.json, SQLSTATE 0A000), which reaches the client as a Spark Connect
`AnalysisException` with that condition.
"""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import pytest
from pyspark.errors import PySparkException
from pyspark.errors.exceptions.connect import AnalysisException
from pyspark.pipelines.block_session_mutations import block_session_mutations
from pyspark.sql.connect.conf import RuntimeConf

from mssql_cdc import register
from mssql_cdc.source.parallelism import default_parallelism
from mssql_cdc.source.pipeline_refusals import refused_by_pipeline

REDACTION = "spark.sql.redaction.options.regex"
EXTENDED = "(?i)url|(?i)connectionString|(?i)password|(?i)accessToken"


class SessionConf(RuntimeConf):
    """A Spark Connect `RuntimeConf` over a dict: `get` answers from it; `set` is Spark's own,
    so inside `block_session_mutations()` it is the pipeline's refusal."""

    def __init__(self, values: dict[str, str]) -> None:  # no client: get never calls the server
        self.values = dict(values)

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        return self.values.get(key, default)


def server_error(condition: str) -> AnalysisException:
    """An error of the Spark Connect server as the client raises it: its condition and text."""
    return AnalysisException(message=f"[{condition}] ...", errorClass=condition)


def explain_refused(_text: str) -> Any:
    raise AnalysisException(
        message="[UNSUPPORTED_PIPELINE_SPARK_SQL_COMMAND] 'EXPLAIN' is not supported in "
        'spark.sql("...") API in Spark Declarative Pipeline. SQLSTATE: 0A000',
        errorClass="UNSUPPORTED_PIPELINE_SPARK_SQL_COMMAND",
        messageParameters={"command": "EXPLAIN"},
        sql_state="0A000",
    )


def pipeline_session(conf: dict[str, str], registered: list[Any]) -> Any:
    return SimpleNamespace(
        sql=explain_refused,
        conf=SessionConf(conf),
        dataSource=SimpleNamespace(register=registered.append),
    )


def conf_set_refusal() -> BaseException:
    with block_session_mutations():
        try:
            SessionConf({}).set("spark.default.parallelism", "2")
        except PySparkException as error:
            return error
    raise AssertionError("block_session_mutations() let RuntimeConf.set through")


def test_only_the_two_pipeline_refusals_are_told_apart_from_other_errors() -> None:
    explain = server_error("UNSUPPORTED_PIPELINE_SPARK_SQL_COMMAND")
    assert refused_by_pipeline(explain)
    assert refused_by_pipeline(conf_set_refusal())
    # a server that refuses a conf for another reason, a table not found, a plain error
    assert not refused_by_pipeline(server_error("CANNOT_MODIFY_CONFIG"))
    assert not refused_by_pipeline(server_error("TABLE_OR_VIEW_NOT_FOUND"))
    assert not refused_by_pipeline(ValueError("UNSUPPORTED_PIPELINE_SPARK_SQL_COMMAND"))
    # a condition that only starts with the same letters
    prefixed = server_error("SESSION_MUTATION_IN_DECLARATIVE_PIPELINES_X")
    assert not refused_by_pipeline(prefixed)


def test_register_in_a_pipeline_definition_takes_the_configured_parallelism_and_redaction(
    caplog: pytest.LogCaptureFixture,
) -> None:
    registered: list[Any] = []
    spark = pipeline_session({"spark.default.parallelism": "2", REDACTION: EXTENDED}, registered)
    with block_session_mutations(), caplog.at_level(logging.WARNING):
        register(spark)
    assert [c.name() for c in registered] == ["mssql_cdc", "mssql_cdc_snapshot"]
    assert [c.default_num_partitions for c in registered] == [2, 2]
    assert spark.conf.values[REDACTION] == EXTENDED
    assert not caplog.records  # nothing was refused: nothing to warn about


def test_register_in_a_pipeline_definition_without_those_settings_registers_and_warns(
    caplog: pytest.LogCaptureFixture,
) -> None:
    registered: list[Any] = []
    spark = pipeline_session({}, registered)
    with block_session_mutations(), caplog.at_level(logging.WARNING):
        register(spark)
    assert [c.name() for c in registered] == ["mssql_cdc", "mssql_cdc_snapshot"]
    assert [c.default_num_partitions for c in registered] == [None, None]  # numPartitions=auto
    assert REDACTION not in spark.conf.values  # the pipeline kept it; the warning says what to set
    [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert REDACTION in warning
    assert repr(EXTENDED) in warning


def test_errors_other_than_a_pipeline_refusal_still_fail_register() -> None:
    def explain_fails(_text: str) -> Any:
        raise AnalysisException(errorClass="INTERNAL_ERROR", message="[INTERNAL_ERROR] boom")

    spark = SimpleNamespace(sql=explain_fails, conf=SessionConf({}))
    with pytest.raises(AnalysisException, match="INTERNAL_ERROR"):
        default_parallelism(spark)  # type: ignore[arg-type]

    class RefusingConf(SessionConf):
        def set(self, key: str, value: Any) -> None:
            raise AnalysisException(errorClass="CANNOT_MODIFY_CONFIG", message="static")

    session = SimpleNamespace(
        sql=explain_refused,
        conf=RefusingConf({"spark.default.parallelism": "2"}),
        dataSource=SimpleNamespace(register=lambda _c: None),
    )
    with pytest.raises(AnalysisException, match="static"):
        register(session)
