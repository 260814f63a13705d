"""to_delta's processingTime check agrees with Spark's own parser of trigger intervals."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from mssql_cdc.errors import ConfigError
from mssql_cdc.pipeline.arguments import _trigger

INTERVALS = [
    "10 seconds",
    "1 second",
    "interval 5 seconds",
    "INTERVAL 2 MINUTES",
    "1 minute 30 seconds",
    " 5.5 seconds ",
    "1 hour 2 minutes  3 seconds",
    "100 milliseconds",
    "250 microseconds",
    "1 day",
    "2 weeks",
    "0 seconds",
    "10 sec",
    "10s",
    "1 min",
    "1 hr",
    "100 ms",
    "5",
    "5seconds",
    "1 minute, 30 seconds",
    "1 month",
    "1 year",
    "-5 seconds",
    "PT5S",
    "1 nanosecond",
    "seconds",
]


def spark_takes(spark: SparkSession, interval: str) -> bool:
    trigger = spark._jvm.org.apache.spark.sql.streaming.Trigger  # type: ignore[union-attr]
    try:
        trigger.ProcessingTime(interval)
    except Exception:  # noqa: BLE001 - py4j wraps Spark's parse errors in several types
        return False
    return True


def we_take(interval: str) -> bool:
    try:
        _trigger({"processingTime": interval})
    except ConfigError:
        return False
    return True


@pytest.mark.parametrize("interval", INTERVALS)
def test_a_processing_time_is_refused_exactly_when_spark_refuses_it(
    spark: SparkSession, interval: str
) -> None:
    assert we_take(interval) == spark_takes(spark, interval)
