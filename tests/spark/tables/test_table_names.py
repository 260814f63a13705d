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


def spark_parts(spark: SparkSession, name: str) -> tuple[str, ...] | None:
    """The oracle: Spark's SQL parser splitting a multi-part identifier; None if it refuses."""
    parser: Any = spark._jsparkSession.sessionState().sqlParser()  # type: ignore[union-attr]
    try:
        parts = parser.parseMultipartIdentifier(name)
    except ParseException:
        return None
    return tuple(str(parts.apply(i)) for i in range(parts.length()))


def ours(name: str) -> tuple[str, ...] | None:
    try:
        return parse_name(name)
    except ConfigError:
        return None


@pytest.mark.parametrize(
    "name",
    [
        "orders",
        "ops.facts_2",
        "spark_catalog.ops.Facts",
        "db.2024_orders",
        "`my-cat`.ops.`t``x`",
        "`a.b`.`c d`",
        " ops . select ",
        "ops.`\u00fcn\u00ef`",
        "ops.\u00fcn\u00ef",
        "db.123",
        "db.1e5",
        "db.10L",
        "db.1a",
        "default.t1 SET TBLPROPERTIES ('a' = 'b')",
        "ops.t; DROP TABLE x",
        "ops..t",
        "`ops",
        "my-db.t",
    ],
)
def test_the_parser_accepts_and_splits_a_name_as_sparks_own_parser_does(
    spark: SparkSession, name: str
) -> None:
    assert ours(name) == spark_parts(spark, name)


def test_a_catalog_table_named_by_a_keyword_is_created_opened_and_written(
    spark: SparkSession,
) -> None:
    spark.sql("CREATE DATABASE IF NOT EXISTS refs_db")
    name = "refs_db.select"  # a keyword: SQL takes it only backquoted
    created = tables.ensure_table(spark, name, "control")
    assert created.created
    assert created.ref.sql == "`refs_db`.`select`"
    assert spark.catalog.tableExists("refs_db.`select`")
    again = tables.ensure_table(spark, " `REFS_DB` . select ", "control")
    assert not again.created
    assert again.ref == created.ref
    row = spark.createDataFrame([], spark.table(created.ref.sql).schema)
    table_writes.append_idempotent(row, name, "refs-app", 3)
    assert table_writes.txn_version(spark, name, "refs-app") == 3
