"""The sink's steps that need no JVM: the metrics directory and bronze's schema checks."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from pyspark.sql.types import (
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from mssql_cdc.errors import SchemaChangedError
from mssql_cdc.sink_bronze import TypeDifference, check_batch_schema
from mssql_cdc.sink_files import clear_dead_attempts, remove_files, scan
from mssql_cdc.tables import TableRef

SKIP = {
    "event": "data_skipped",
    "capture_instance": "dbo_orders",
    "lsn": "0x00000000000000000009",
    "commit_ts": "2026-10-01T12:00:09.000",
    "detail": {"from": "0x00000000000000000002", "to": "0x00000000000000000009"},
    "lost_from_ts": None,
    "lost_to_ts": None,
}


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)
    return folder / name


def test_clearing_keeps_event_files_and_subdirectories(tmp_path: Path) -> None:
    write(tmp_path, "range-a-b.json", "{}")
    write(tmp_path, ".range-a-b.json.0f.tmp", "{")
    write(tmp_path, "event-data_skipped-dbo_orders-0x1.json", json.dumps(SKIP))
    write(tmp_path / "_backfill", "chunk-0.json", "{}")

    assert clear_dead_attempts(tmp_path) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "_backfill",
        "event-data_skipped-dbo_orders-0x1.json",
    ]
    assert clear_dead_attempts(tmp_path / "missing") == 0


def test_scanning_skips_unreadable_files_but_returns_them_for_removal(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    good = write(tmp_path, "range-1-2.json", json.dumps({"to_lsn": "0x2", "events": [SKIP]}))
    torn = write(tmp_path, "range-3-4.json", '{"to_lsn": ')
    listed = write(tmp_path, "range-5-6.json", "[1, 2]")
    event = write(tmp_path, "event-data_skipped-dbo_orders-0x2.json", json.dumps(SKIP))
    foreign = write(tmp_path, "event-other-x.json", json.dumps({**SKIP, "event": "vacuum"}))
    write(tmp_path, ".range-7-8.json.1a.tmp", "{")
    write(tmp_path / "_backfill", "chunk-0.json", "{}")

    with caplog.at_level(logging.WARNING, logger="mssql_cdc.sink"):
        found = scan(tmp_path)

    assert found.metrics == [{"to_lsn": "0x2", "events": [SKIP]}]
    assert found.events == [SKIP]
    assert sorted(found.paths) == sorted([good, torn, listed, event, foreign])
    warned = " ".join(r.getMessage() for r in caplog.records)
    for path in (torn, listed, foreign):
        assert str(path) in warned

    remove_files(found.paths)
    remove_files(found.paths)  # already gone is fine
    assert sorted(p.name for p in tmp_path.iterdir()) == [".range-7-8.json.1a.tmp", "_backfill"]


TABLE = StructType(
    [
        StructField("_start_lsn", StringType()),
        StructField("id", IntegerType()),
        StructField("address", StructType([StructField("city", StringType())])),
    ]
)
REF = TableRef("/data/bronze")


def test_new_columns_and_new_nested_fields_pass_the_type_check() -> None:
    batch = StructType(
        [
            StructField("_START_LSN", StringType()),  # names compare ignoring case
            StructField("id", IntegerType()),
            StructField(
                "address",
                StructType([StructField("city", StringType()), StructField("zip", StringType())]),
            ),
            StructField("note", StringType()),
        ]
    )
    assert check_batch_schema(REF, TABLE, batch, unread) == []


def unread() -> dict[str, str]:
    raise AssertionError("the properties were read for a batch that needs none")


def test_a_changed_type_is_refused_unless_the_table_widens_types() -> None:
    batch = StructType(
        [
            StructField("id", LongType()),
            StructField("address", StructType([StructField("city", IntegerType())])),
        ]
    )
    with pytest.raises(SchemaChangedError) as raised:
        check_batch_schema(REF, TABLE, batch, dict)
    message = str(raised.value)
    assert "/data/bronze: column id is int in the table but bigint" in message
    assert "(and 1 more column(s))" in message
    assert "start a new bronze table" in message

    widening = {"delta.enableTypeWidening": "true"}
    assert check_batch_schema(REF, TABLE, batch, lambda: widening) == [
        TypeDifference("id", "int", "bigint"),
        TypeDifference("address.city", "string", "int"),
    ]


def test_a_new_column_needing_column_mapping_prints_the_statement_to_run() -> None:
    batch = StructType([StructField("unit price", StringType())])
    with pytest.raises(SchemaChangedError, match="SET TBLPROPERTIES") as raised:
        check_batch_schema(REF, TABLE, batch, dict)
    assert "'unit price'" in str(raised.value)
    assert "delta.`/data/bronze`" in str(raised.value)
    assert check_batch_schema(REF, TABLE, batch, lambda: {"delta.columnMapping.mode": "name"}) == []
