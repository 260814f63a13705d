"""The CREATE TABLE statement a library table is born with, compared with literal SQL."""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    DecimalType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)

from mssql_cdc.tables.creation import create_statement
from mssql_cdc.tables.refs import create_table_sql, table_ref
from mssql_cdc.tables.shapes import ShapeColumn, shape_of

SILVER_TAIL = (
    "`_start_lsn` STRING COMMENT 'LSN of the row\\'s current image; the snapshot\\'s LSN if "
    "unchanged since', `_commit_ts` TIMESTAMP_NTZ COMMENT 'Commit time of _start_lsn, UTC'"
)
SILVER_COMMENT = "COMMENT 'mssql_cdc silver: the current row of each key of one source table'"


def test_a_silver_table_at_a_path_is_created_with_its_columns_comments_and_properties() -> None:
    schema = StructType(
        [StructField("id", IntegerType()), StructField("amount", DecimalType(18, 2))]
    )
    sql = create_table_sql(table_ref("/data/silver"), "silver", shape_of("silver", schema))
    assert sql == (
        "CREATE TABLE delta.`/data/silver` (`id` int, `amount` decimal(18,2), "
        f"{SILVER_TAIL}) USING delta {SILVER_COMMENT} "
        "TBLPROPERTIES ('mssql_cdc.kind' = 'silver', 'mssql_cdc.schema_version' = '0')"
    )


def test_odd_column_names_are_backquoted_and_turn_column_mapping_on() -> None:
    schema = StructType([StructField("order id", LongType()), StructField("we`ird", StringType())])
    sql = create_table_sql(table_ref("ops.Silver"), "silver", shape_of("silver", schema))
    assert sql == (
        "CREATE TABLE `ops`.`Silver` (`order id` bigint, `we``ird` string, "
        f"{SILVER_TAIL}) USING delta {SILVER_COMMENT} "
        "TBLPROPERTIES ('mssql_cdc.kind' = 'silver', 'mssql_cdc.schema_version' = '0', "
        "'delta.columnMapping.mode' = 'name')"
    )


def test_the_control_table_is_stamped_with_its_newest_schema_version() -> None:
    sql = create_table_sql(table_ref("/c/control"), "control", shape_of("control", None))
    assert sql.startswith(
        "CREATE TABLE delta.`/c/control` (`table_name` STRING COMMENT 'Exact "
        "table string passed to advance, or the silver target', `finalized_until` TIMESTAMP_NTZ "
    )
    assert sql.endswith(
        "`snapshot_wave` INT COMMENT 'Silver: last wave of that snapshot applied, else NULL') "
        "USING delta COMMENT 'mssql_cdc control: one row per table name: its completeness "
        "verdict and, for silver, its position in bronze' "
        "TBLPROPERTIES ('mssql_cdc.kind' = 'control', 'mssql_cdc.schema_version' = '3')"
    )


def test_nested_types_quote_their_field_names_and_strings_escape_quotes() -> None:
    nested = StructType(
        [
            StructField("a b", IntegerType(), nullable=False),
            StructField("tags", ArrayType(StringType())),
            StructField("m", MapType(StringType(), LongType())),
        ]
    )
    columns = [ShapeColumn("s", nested, "it's a \\ struct"), ShapeColumn("x", "INT", None)]
    sql = create_statement("delta.`/t`", columns, comment="o'k", properties={"k'": "v\\"})
    assert sql == (
        "CREATE TABLE delta.`/t` (`s` STRUCT<`a b`: int NOT NULL, "
        "`tags`: ARRAY<string>, `m`: MAP<string, bigint>> COMMENT 'it\\'s a \\\\ struct', "
        "`x` INT) USING delta COMMENT 'o\\'k' TBLPROPERTIES ('k\\'' = 'v\\\\')"
    )
