"""Catalog names as the library reads and emits them, held to Spark's own parser and catalog."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.errors import ParseException
from pyspark.sql import SparkSession

from mssql_cdc.errors import ConfigError
from mssql_cdc.tables import refs as tables
from mssql_cdc.tables import writes as table_writes
from mssql_cdc.tables.ref_syntax import parse_name


def spark_parts(spark: SparkSession, name: str) -> tuple[str, ...]:
    """The oracle: Spark's SQL parser splitting a multi-part identifier."""
    parser: Any = spark._jsparkSession.sessionState().sqlParser()  # type: ignore[union-attr]
    return tuple(parser.parseMultipartIdentifier(name))


ACCEPTED = [
    "orders",
    "ops.facts_2",
    "spark_catalog.ops.Facts",
    "_x.1a",
    "`my-cat`.ops.`t``x`",
    "`a.b`.`c d`",
    " ops . select ",
    "ops.`ünï`",
]


@pytest.mark.parametrize("name", ACCEPTED)
def test_the_parts_of_an_accepted_name_are_the_parts_spark_parses(
    spark: SparkSession, name: str
) -> None:
    assert parse_name(name) == spark_parts(spark, name)


@pytest.mark.parametrize(
    "name", ["default.t1 SET TBLPROPERTIES ('a' = 'b')", "ops.t; DROP TABLE x", "ops..t", "`ops"]
)
def test_a_name_spark_cannot_parse_is_refused_as_well(spark: SparkSession, name: str) -> None:
    with pytest.raises(ParseException):
        spark_parts(spark, name)
    with pytest.raises(ConfigError, match="is not a valid table name"):
        parse_name(name)


def test_a_catalog_table_whose_name_needs_backquotes_is_created_opened_and_written(
    spark: SparkSession,
) -> None:
    spark.sql("CREATE DATABASE IF NOT EXISTS `refs-db`")
    name = "spark_catalog.`refs-db`.`odd.name select`"
    created = tables.ensure_table(spark, name, "control")
    assert created.created
    assert created.ref.sql == "`spark_catalog`.`refs-db`.`odd.name select`"
    assert spark.catalog.tableExists("`refs-db`.`odd.name select`")
    again = tables.ensure_table(spark, " spark_catalog . `REFS-DB`.`odd.name select` ", "control")
    assert not again.created
    assert again.ref == created.ref
    row = spark.createDataFrame([], spark.table(created.ref.sql).schema)
    table_writes.append_idempotent(row, name, "refs-app", 3)
    assert table_writes.txn_version(spark, name, "refs-app") == 3
