"""Table references and the column lists of new tables, without a JVM."""

from __future__ import annotations

import pytest
from pyspark.sql.types import (
    DecimalType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
)

from mssql_cdc.errors import InternalError, SchemaChangedError
from mssql_cdc.tables.refs import require_distinct, table_ref
from mssql_cdc.tables.shapes import (
    check_append_schema,
    needs_column_mapping,
    shape_of,
    spark_type_name,
)


@pytest.mark.parametrize(
    ("text", "is_path", "sql"),
    [
        ("ops.ingestion_facts", False, "`ops`.`ingestion_facts`"),
        ("main.ops.facts", False, "`main`.`ops`.`facts`"),
        ("/Volumes/c/s/v/facts", True, "delta.`/Volumes/c/s/v/facts`"),
        ("abfss://c@a.dfs.core.windows.net/t", True, "delta.`abfss://c@a.dfs.core.windows.net/t`"),
        ("/relative/../dir/", True, "delta.`/dir`"),
        ("/odd/na`me", True, "delta.`/odd/na``me`"),
    ],
)
def test_a_slash_or_colon_makes_a_path_else_a_catalog_name(
    text: str, is_path: bool, sql: str
) -> None:
    ref = table_ref(text)
    assert ref.is_path is is_path
    assert ref.sql == sql


@pytest.mark.parametrize("value", ["", "   ", None, 3, b"ops.facts"])
def test_an_empty_or_non_string_table_is_a_value_error_naming_the_argument(value: object) -> None:
    with pytest.raises(ValueError, match="facts_table="):
        table_ref(value, argument="facts_table")


def test_two_arguments_naming_one_table_are_a_value_error() -> None:
    require_distinct(target="bronze.orders", facts_table="ops.facts", control_table=None)
    with pytest.raises(ValueError, match="target and facts_table are the same table"):
        require_distinct(target="ops.t", facts_table="ops.t")


def field(name: str, type_: object) -> StructField:
    return StructField(name, type_, True)  # type: ignore[arg-type]


STREAM = StructType(
    [
        field("_capture_instance", StringType()),
        field("_start_lsn", StringType()),
        field("_seqval", StringType()),
        field("_operation", IntegerType()),
        field("_commit_ts", TimestampNTZType()),
        field("id", IntegerType()),
        field("_command_id", IntegerType()),
        field("amount", DecimalType(10, 2)),
    ]
)


def test_bronze_puts_output_captured_then_added_columns_in_the_spec_order() -> None:
    columns = shape_of("bronze", STREAM)
    assert [(c.name, spark_type_name(c.type)) for c in columns] == [
        ("_capture_instance", "string"),
        ("_start_lsn", "string"),
        ("_seqval", "string"),
        ("_operation", "int"),
        ("_command_id", "int"),
        ("_commit_ts", "timestamp_ntz"),
        ("id", "int"),
        ("amount", "decimal(10,2)"),
        ("_batch_id", "bigint"),
        ("_snapshot", "string"),
        ("_chunk", "int"),
    ]
    assert [c.comment is None for c in columns] == [False] * 6 + [True, True] + [False] * 3


def test_bronze_leaves_out_command_id_when_the_stream_has_none() -> None:
    without = StructType([f for f in STREAM.fields if f.name != "_command_id"])
    assert "_command_id" not in [c.name for c in shape_of("bronze", without)]


def test_silver_takes_the_captured_columns_of_bronze_then_its_own() -> None:
    bronze = StructType([*STREAM.fields, field("_batch_id", LongType())])
    assert [c.name for c in shape_of("silver", bronze)] == [
        "id",
        "amount",
        "_start_lsn",
        "_commit_ts",
    ]


def test_a_library_column_with_another_type_or_spelling_is_refused() -> None:
    retyped = StructType([field("_operation", StringType())])
    with pytest.raises(ValueError, match=r"_operation has type string.*needs int"):
        shape_of("bronze", retyped)
    with pytest.raises(ValueError, match="'_Start_LSN' collides with the library column"):
        shape_of("bronze", StructType([field("_Start_LSN", StringType())]))
    with pytest.raises(InternalError, match="source schema"):  # callers always pass one
        shape_of("bronze", None)


@pytest.mark.parametrize(
    ("name", "needed"),
    [("order id", True), ("a,b", True), ("f(x)", True), ("k=v", True), ("tab\there", True),
     ("plain_name", False), ("Ünïcode", False), ("dash-ed", False)],
)  # fmt: skip
def test_column_mapping_is_needed_only_for_characters_delta_refuses(
    name: str, needed: bool
) -> None:
    assert needs_column_mapping([name]) is needed


def test_an_append_may_add_columns_but_never_retype_one() -> None:
    table = StructType([field("id", IntegerType()), field("name", StringType())])
    check_append_schema("bronze.o", table, StructType([*table.fields, field("x", LongType())]), {})
    retyped = StructType([field("ID", LongType())])
    with pytest.raises(
        SchemaChangedError, match=r"bronze\.o: column ID is int in the table but bigint"
    ):
        check_append_schema("bronze.o", table, retyped, {})
    check_append_schema("bronze.o", table, retyped, {"delta.enableTypeWidening": "true"})


def test_a_new_column_delta_cannot_name_prints_the_statement_to_run() -> None:
    table = StructType([field("id", IntegerType())])
    spaced = StructType([field("order id", IntegerType())])
    with pytest.raises(
        SchemaChangedError, match=r"SET TBLPROPERTIES \('delta\.columnMapping\.mode'"
    ):
        check_append_schema("bronze.o", table, spaced, {})
    check_append_schema("bronze.o", table, spaced, {"delta.columnMapping.mode": "name"})
