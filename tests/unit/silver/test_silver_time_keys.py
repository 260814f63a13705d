"""`apply_changes` and gap deletes refuse a time key Spark merges, from the SQL types bronze
records, before anything is written (decision 1343).

datetime2(7) keeps 100 ns (https://learn.microsoft.com/en-us/sql/t-sql/data-types/datetime2-transact-sql)
and a Spark TIMESTAMP_NTZ microseconds, so two source keys 100 ns apart would be one key: the
check needs no rows and no JVM, only bronze's schema and table properties.
"""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest
from pyspark.sql.types import IntegerType, StringType, StructField, StructType, TimestampNTZType

from mssql_cdc.core import StreamOffset, lsn
from mssql_cdc.errors import ConfigError
from mssql_cdc.silver.checks import check_keys
from mssql_cdc.silver.images import BronzeShape
from mssql_cdc.snapshot.gap_deletes import derived_deletes
from mssql_cdc.tables import refs
from mssql_cdc.tables.reference import table_ref
from mssql_cdc.tables.refs import SQL_TYPES_PROPERTY, create_table_sql, recorded_sql_types
from mssql_cdc.tables.shapes import shape_of

TYPED = {"mssql_cdc.sql_type": "datetime2(7)"}
COMMIT_TS = StructField("_commit_ts", TimestampNTZType())


def shape(*captured: StructField) -> BronzeShape:
    return BronzeShape(captured, COMMIT_TS, True, True, True)


def test_apply_changes_refuses_a_datetime2_7_key_held_as_a_timestamp_naming_it() -> None:
    fields = (
        StructField("placed_at", TimestampNTZType(), True, TYPED),
        StructField("v", StringType()),
    )
    with pytest.raises(ConfigError) as caught:
        check_keys(["placed_at"], shape(*fields), "/b")
    message = str(caught.value)
    assert message.startswith("apply_changes: bronze /b: key column placed_at is datetime2(7)")
    assert "declare placed_at as a STRING with the columns option" in message
    assert "datetime2(6)" in message


def test_apply_changes_reads_the_type_from_bronzes_property_when_the_schema_lacks_it() -> None:
    fields = (StructField("placed_at", TimestampNTZType()), StructField("v", StringType()))
    with pytest.raises(ConfigError, match="key column placed_at is datetime2"):
        check_keys(["placed_at"], shape(*fields), "/b", {"placed_at": "datetime2"})


def test_apply_changes_keeps_a_bronze_without_recorded_types_and_a_string_key() -> None:
    check_keys(["placed_at"], shape(StructField("placed_at", TimestampNTZType())), "/b", {})
    held_as_text = StructField("placed_at", StringType(), True, TYPED)
    check_keys(["placed_at"], shape(held_as_text), "/b", {"placed_at": "datetime2(7)"})
    check_keys(["v"], shape(StructField("placed_at", TimestampNTZType(), True, TYPED),
                            StructField("v", StringType())), "/b")  # fmt: skip


def test_gap_deletes_refuse_a_datetime2_7_key_before_building_any_row() -> None:
    """No JVM here: the refusal comes before the first Spark column is built."""
    schema = StructType([StructField("k", TimestampNTZType()), StructField("v", StringType())])
    bronze: Any = SimpleNamespace(schema=schema)
    snapshot = StreamOffset(lsn.Lsn("0x0000002A000000010001"), None)
    with pytest.raises(ConfigError) as caught:
        derived_deletes(bronze, ["k"], snapshot, None, {"k": "datetime2(7)"})
    assert "key column k is datetime2(7)" in str(caught.value)


def test_a_new_bronze_records_its_captured_columns_sql_types_in_a_property(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    schema = StructType(
        [
            StructField("_capture_instance", StringType()),
            StructField("_start_lsn", StringType()),
            StructField("_seqval", StringType()),
            StructField("_operation", IntegerType()),
            COMMIT_TS,
            StructField("k", TimestampNTZType(), True, TYPED),
            StructField("v", StringType()),
        ]
    )
    columns = shape_of("bronze", schema)
    sql = create_table_sql(table_ref("/data/bronze"), "bronze", columns)
    assert f"'{SQL_TYPES_PROPERTY}' = '{{\"k\":\"datetime2(7)\"}}'" in sql
    silver = create_table_sql(table_ref("/data/silver"), "silver", shape_of("silver", schema))
    assert SQL_TYPES_PROPERTY not in silver

    spark: Any = None
    found = {SQL_TYPES_PROPERTY: json.dumps({"k": "datetime2(7)"}), "mssql_cdc.kind": "bronze"}
    monkeypatch.setattr(refs, "table_properties", lambda _spark, _ref: found)
    assert recorded_sql_types(spark, "/data/bronze") == {"k": "datetime2(7)"}
    found = {"mssql_cdc.kind": "bronze"}  # a bronze created before types were recorded
    assert recorded_sql_types(spark, "/data/bronze") == {}
