"""The `xml` type in the emulator (issue 21 item 5): stored as text, captured, read as a string
column, sent over TDS as nvarchar(max).

Oracles: the documents the test writes, SQL Server's documented NULL rule of the change table
(operation 3 is NULL only for text, ntext, image and the three (max) types, so xml keeps its
old value), and the stdlib sqlite3 view of the change table. Connections stay on 127.0.0.1.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from mssql_cdc.emulator import Emulator, SchemaError
from mssql_cdc.options.config import SourceConfig
from mssql_cdc.source.table_schema import declared_columns, resolve_table
from mssql_cdc.sqlserver.backend_choice import open_backend
from tests.unit.support.emulator_oracle import at, raw_change_rows
from tests.unit.support.tds_clients import connect

DOC = "<order id='1'><line sku='a'/></order>"
NEW_DOC = "<order id='1'><line sku='b'/></order>"


@pytest.fixture
def emu(tmp_path: Path) -> Iterator[Emulator]:
    emulator = Emulator.create(tmp_path / "e.db", start="2026-09-28T13:50:00")
    emulator.create_table(
        "dbo.docs", {"doc_id": "int", "body": "XML", "note": "nvarchar(10)"}, primary_key="doc_id"
    )
    emulator.enable_cdc("dbo.docs")
    yield emulator
    emulator.close()


def test_an_xml_document_is_stored_and_read_back_as_text(emu: Emulator) -> None:
    emu.commit([("insert", "dbo.docs", {"doc_id": 1, "body": DOC})], at=at(1))
    assert emu.rows("dbo.docs") == [{"doc_id": 1, "body": DOC, "note": None}]
    [column] = [c for c in emu.captured_columns("dbo_docs") if c["name"] == "body"]
    assert (column["sql_type"], column["arrow_type"]) == ("xml", "string")


def test_change_rows_keep_the_old_xml_value_in_operation_3(emu: Emulator) -> None:
    emu.commit([("insert", "dbo.docs", {"doc_id": 1, "body": DOC})], at=at(1))
    emu.commit([("update", "dbo.docs", {"doc_id": 1, "note": "n"})], at=at(2))
    emu.commit([("update", "dbo.docs", {"doc_id": 1, "body": NEW_DOC})], at=at(3))
    stored = raw_change_rows(emu.path, "dbo_docs")
    assert [(r["__$operation"], r["body"]) for r in stored] == [
        (2, DOC),
        (3, DOC),  # not set by the update, and still kept: xml is not a (max) type
        (4, DOC),
        (3, DOC),  # set by the update: the old value is kept
        (4, NEW_DOC),
    ]


def test_the_change_read_gives_xml_as_an_arrow_string(emu: Emulator) -> None:
    lsn = emu.commit([("insert", "dbo.docs", {"doc_id": 1, "body": DOC})], at=at(1))
    batches = emu.reader().read_changes("dbo_docs", lsn, lsn).read_all()
    assert batches.schema.field("body").type == pa.string()
    assert batches.column("body").to_pylist() == [DOC]


def test_the_source_reads_an_xml_column_as_a_spark_string(emu: Emulator) -> None:
    config = SourceConfig.from_options(
        {"captureInstance": "dbo_docs", "backend": "emulator", "emulatorPath": str(emu.path)}
    )
    backend = open_backend(config)
    try:
        columns = declared_columns(
            backend.catalog, config, resolve_table(backend.catalog, "dbo_docs")
        )
    finally:
        backend.close()
    assert {c.name: c.spark_type for c in columns}["body"] == "STRING"


@pytest.mark.parametrize(
    "call",
    ["key", "alter to nvarchar", "alter from nvarchar"],
)
def test_xml_is_no_key_and_changes_type_with_no_other_family(tmp_path: Path, call: str) -> None:
    with Emulator.create(tmp_path / "e.db") as emu:
        emu.create_table(
            "dbo.t", {"id": "int", "body": "xml", "note": "nvarchar(max)"}, primary_key="id"
        )
        with pytest.raises(SchemaError):
            if call == "key":
                emu.create_table("dbo.k", {"body": "xml"}, primary_key="body")
            elif call == "alter to nvarchar":
                emu.alter_column("dbo.t", "body", "nvarchar(max)", at=at(1))
            else:
                emu.alter_column("dbo.t", "note", "xml", at=at(1))


def test_over_tds_xml_reads_as_nvarchar_max_and_sys_columns_says_xml(emu: Emulator) -> None:
    emu.commit([("insert", "dbo.docs", {"doc_id": 1, "body": DOC})], at=at(1))
    with emu.serve() as server:
        conn = connect(server, "pymssql")
        try:
            cursor = conn.cursor()
            cursor.execute("SELECT body FROM dbo.docs WHERE doc_id = 1")
            body = cursor.fetchall()
            cursor.execute(
                "SELECT system_type_id, max_length, TYPE_NAME(system_type_id) FROM sys.columns "
                "WHERE object_id = OBJECT_ID('dbo.docs') AND name = 'body'"
            )
            facts = cursor.fetchall()
        finally:
            conn.close()
    assert body == [(DOC,)]
    assert facts == [(241, -1, "xml")]
