"""Schema rules: the 6.4 type map, the 8.4 widenings, the union across instances, DDL checks."""

from __future__ import annotations

import pytest

from mssql_cdc.errors import ConfigError, SchemaChangedError
from mssql_cdc.source.type_rules import (
    check_captured_types,
    policy_fail_error,
    schema_change_event,
    schema_changed_error,
    spark_type_of,
    switch_event,
    switch_type_error,
    union_columns,
    widens_to,
)

TYPE_MAP = [
    ("bit", "BOOLEAN"),
    ("tinyint", "SMALLINT"),
    ("smallint", "SMALLINT"),
    ("int", "INT"),
    ("bigint", "BIGINT"),
    ("real", "FLOAT"),
    ("float", "DOUBLE"),
    ("decimal(12,2)", "DECIMAL(12,2)"),
    ("NUMERIC(38, 10)", "DECIMAL(38,10)"),
    ("decimal", "DECIMAL(18,0)"),
    ("money", "DECIMAL(19,4)"),
    ("smallmoney", "DECIMAL(10,4)"),
    ("date", "DATE"),
    ("datetime", "TIMESTAMP_NTZ"),
    ("datetime2(7)", "TIMESTAMP_NTZ"),
    ("smalldatetime", "TIMESTAMP_NTZ"),
    ("datetimeoffset(3)", "TIMESTAMP"),
    ("time(7)", "STRING"),
    ("nvarchar(max)", "STRING"),
    ("char(10)", "STRING"),
    ("text", "STRING"),
    ("xml", "STRING"),
    ("uniqueidentifier", "STRING"),
    ("varbinary(16)", "BINARY"),
    ("image", "BINARY"),
    ("rowversion", "BINARY"),
    ("timestamp", "BINARY"),
]


@pytest.mark.parametrize(("sql_type", "spark"), TYPE_MAP)
def test_sql_server_types_map_to_the_spec_spark_types(sql_type: str, spark: str) -> None:
    assert spark_type_of("c", sql_type) == spark


@pytest.mark.parametrize("sql_type", ["sql_variant", "geography", "geometry", "hierarchyid"])
def test_types_without_a_spark_form_name_the_column_and_the_way_out(sql_type: str) -> None:
    with pytest.raises(ConfigError, match=f"column 'shape' has type {sql_type}.*as STRING"):
        spark_type_of("shape", sql_type)


WIDENINGS = [
    ("SMALLINT", "INT", True),
    ("INT", "BIGINT", True),
    ("SMALLINT", "BIGINT", True),
    ("BIGINT", "INT", False),
    ("INT", "DOUBLE", True),
    ("BIGINT", "DOUBLE", False),
    ("FLOAT", "DOUBLE", True),
    ("DOUBLE", "FLOAT", False),
    ("DATE", "TIMESTAMP_NTZ", True),
    ("TIMESTAMP_NTZ", "DATE", False),
    ("SMALLINT", "DECIMAL(5,0)", True),
    ("SMALLINT", "DECIMAL(6,2)", False),
    ("INT", "DECIMAL(12,2)", True),
    ("INT", "DECIMAL(11,2)", False),
    ("BIGINT", "DECIMAL(20,0)", True),
    ("BIGINT", "DECIMAL(38,19)", False),
    ("DECIMAL(10,2)", "DECIMAL(12,4)", True),
    ("DECIMAL(10,2)", "DECIMAL(12,1)", False),
    ("DECIMAL(10,2)", "DECIMAL(11,3)", True),
    ("DECIMAL(10,2)", "DECIMAL(10,3)", False),
    ("STRING", "STRING", True),
    ("STRING", "BINARY", False),
]


@pytest.mark.parametrize(("old", "new", "ok"), WIDENINGS)
def test_only_the_spec_widenings_are_compatible(old: str, new: str, ok: bool) -> None:
    assert widens_to(old, new) is ok


def test_the_union_keeps_older_columns_first_and_takes_a_wider_newer_type() -> None:
    v1 = [("id", "INT"), ("amount", "DECIMAL(10,2)"), ("old_note", "STRING")]
    v2 = [("id", "BIGINT"), ("Amount", "DECIMAL(12,2)"), ("extra", "DATE")]
    assert union_columns("dbo_orders", [v1, v2]) == [
        ("id", "BIGINT"),
        ("amount", "DECIMAL(12,2)"),
        ("old_note", "STRING"),
        ("extra", "DATE"),
    ]


def test_a_narrower_newer_type_is_a_schema_change_error() -> None:
    with pytest.raises(SchemaChangedError, match="column 'id' is BIGINT in the older"):
        union_columns("dbo_orders", [[("id", "BIGINT")], [("id", "INT")]])


def test_ddl_checks_report_type_changes_and_whether_the_declared_type_holds_them() -> None:
    declared = {"id": "BIGINT", "qty": "INT", "note": "STRING", "shape": "STRING"}
    captured = [
        ("id", "int"),  # narrower: held by BIGINT
        ("qty", "bigint"),  # wider: INT cannot hold it
        ("note", "nvarchar(50)"),  # unchanged
        ("shape", "geography"),  # no Spark form at all
        ("unread", "int"),  # not read by this query
    ]
    checks = check_captured_types(declared, captured)
    assert [(c.column, c.new_spark_type, c.fits) for c in checks] == [
        ("id", "INT", True),
        ("qty", "BIGINT", False),
        ("shape", "(none)", False),
    ]
    error = schema_changed_error("dbo_orders", checks[1], "int", "0x0000002A000001F00003")
    text = str(error)
    for part in (
        "'dbo_orders'",
        "'qty'",
        "from int to bigint",
        "0x0000002A000001F00003",
        "INT",
        "restart the query",
        "Delta type widening",
    ):
        assert part in text
    assert error.capture_instance == "dbo_orders"


def test_a_switch_type_error_names_both_instances_the_column_and_the_way_on() -> None:
    [check] = check_captured_types({"qty": "INT"}, [("qty", "bigint")])
    inferred = switch_type_error(
        "dbo_orders", "dbo_orders_v2", "0x0A", check, declared_by_option=False
    )
    text = str(inferred)
    for part in (
        "capture instance 'dbo_orders_v2', which replaces 'dbo_orders' from 0x0A",
        "column 'qty' as bigint (Spark BIGINT)",
        "declared type INT cannot hold",
        "nothing of this batch was read",
        "restart the query so the schema is inferred again",
    ):
        assert part in text
    assert inferred.capture_instance == "dbo_orders_v2"
    declared = switch_type_error(
        "dbo_orders", "dbo_orders_v2", "0x0A", check, declared_by_option=True
    )
    assert "declare 'qty' in the columns option with a type that holds both" in str(declared)


def test_policy_fail_names_the_ddl_and_how_to_pass_it() -> None:
    text = str(policy_fail_error("dbo_orders", "0x01", "ALTER TABLE dbo.orders ADD x int"))
    assert "ALTER TABLE dbo.orders ADD x int" in text
    assert "schemaChangePolicy=classify" in text


def test_schema_events_have_the_9_3_shape_and_names() -> None:
    record = schema_change_event(
        "dbo orders",
        "0x0000002A000001F00003",
        "2026-09-28T14:03:12.117",
        "ALTER TABLE x",
        batch_start_lsn="0x0000002A000001000000",
        batch_end_lsn="0x0000002A000001F00009",
    )
    assert record.file_name == "event-schema_change-dbo%20orders-0x0000002A000001F00003.json"
    assert record.detail == {"capture_instance": "dbo orders", "ddl": "ALTER TABLE x"}
    assert (record.lost_from_ts, record.lost_to_ts) == (None, None)
    record = switch_event(
        "dbo_orders",
        "dbo_orders_v2",
        "0x0000002A000001F00003",
        None,
        ["note"],
        batch_start_lsn="0x0000002A000001000000",
        batch_end_lsn="0x0000002A000001F00009",
    )
    assert record.file_name == (
        "event-capture_instance_switched-dbo_orders_v2-0x0000002A000001F00003.json"
    )
    assert record.detail == {"old": "dbo_orders", "new": "dbo_orders_v2", "uncaptured": ["note"]}
    assert list(record.to_json()) == [
        "event",
        "capture_instance",
        "lsn",
        "commit_ts",
        "detail",
        "lost_from_ts",
        "lost_to_ts",
        "batch_start_lsn",
        "batch_end_lsn",
    ]
