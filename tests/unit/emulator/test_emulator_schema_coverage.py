"""Schema features of SQL Server the emulator models (issue 21 item 5): identity and computed
columns.

Oracles: plain Python arithmetic (seed and increment, Decimal products, string joins), SQL
Server's documented error numbers and texts, and the stdlib sqlite3 view of the change table.
Connections stay on 127.0.0.1.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pymssql
import pytest

from mssql_cdc.emulator import ConstraintError, Emulator, SchemaError
from mssql_cdc.options.config import SourceConfig
from mssql_cdc.source.table_schema import declared_columns, resolve_table
from mssql_cdc.sqlserver.backend_choice import open_backend
from mssql_cdc.sqlserver.emulated.backend import EmulatorBackend
from mssql_cdc.sqlserver.emulated.snapshot import EmulatorSnapshotReader
from tests.unit.emulator.test_tds_drivers import server_error
from tests.unit.support.emulator_oracle import at, raw_change_rows
from tests.unit.support.tds_clients import connect


def tickets(path: Path, id_type: str) -> Emulator:
    emu = Emulator.create(path, start="2026-09-28T13:50:00")
    emu.create_table(
        "dbo.tickets", {"ticket_id": id_type, "title": "nvarchar(40)"}, primary_key="ticket_id"
    )
    emu.enable_cdc("dbo.tickets")
    return emu


@pytest.fixture
def emu(tmp_path: Path) -> Iterator[Emulator]:
    emulator = tickets(tmp_path / "e.db", "int identity(100, 7)")
    yield emulator
    emulator.close()


def test_inserts_without_the_identity_take_the_seed_then_add_the_increment(
    emu: Emulator,
) -> None:
    emu.commit([("insert", "dbo.tickets", {"title": t}) for t in "ab"], at=at(1))
    emu.commit([("insert", "dbo.tickets", {"title": "c"})], at=at(2))
    expected = [100 + 7 * k for k in range(3)]
    assert [r["ticket_id"] for r in emu.rows("dbo.tickets")] == expected
    assert [r["title"] for r in emu.rows("dbo.tickets")] == ["a", "b", "c"]


def test_change_rows_carry_the_identity_value_the_insert_took(emu: Emulator) -> None:
    emu.commit([("insert", "dbo.tickets", {"title": "a"})], at=at(1))
    emu.commit([("update", "dbo.tickets", {"ticket_id": 100, "title": "b"})], at=at(2))
    stored = raw_change_rows(emu.path, "dbo_tickets")
    assert [(r["__$operation"], r["ticket_id"], r["title"]) for r in stored] == [
        (2, 100, "a"),
        (3, 100, "a"),
        (4, 100, "b"),
    ]


def test_the_reader_reports_which_column_is_the_identity(emu: Emulator) -> None:
    info = emu.reader().table_info("dbo.tickets")
    assert {c["name"]: c["is_identity"] for c in info["columns"]} == {
        "ticket_id": True,
        "title": False,
    }


def test_an_explicit_identity_value_is_error_544_and_changes_nothing(emu: Emulator) -> None:
    with pytest.raises(ConstraintError) as caught:
        emu.commit([("insert", "dbo.tickets", {"ticket_id": 5, "title": "a"})], at=at(1))
    assert caught.value.number == 544
    assert "Cannot insert explicit value for identity column in table 'tickets'" in str(
        caught.value
    )
    assert emu.rows("dbo.tickets") == []
    emu.commit([("insert", "dbo.tickets", {"title": "a"})], at=at(1))
    assert emu.rows("dbo.tickets") == [{"ticket_id": 100, "title": "a"}]


def test_changing_an_identity_value_is_error_8102(emu: Emulator) -> None:
    emu.commit([("insert", "dbo.tickets", {"title": "a"})], at=at(1))
    with pytest.raises(ConstraintError) as caught:
        emu.commit([("update", "dbo.tickets", {"ticket_id": 200}, {"ticket_id": 100})], at=at(2))
    assert caught.value.number == 8102
    assert "Cannot update identity column 'ticket_id'" in str(caught.value)
    assert emu.rows("dbo.tickets") == [{"ticket_id": 100, "title": "a"}]


def test_an_identity_past_the_range_of_its_type_is_error_8115(tmp_path: Path) -> None:
    with tickets(tmp_path / "e.db", "tinyint identity(250, 5)") as emu:
        emu.commit([("insert", "dbo.tickets", {"title": t}) for t in "ab"], at=at(1))
        with pytest.raises(ConstraintError) as caught:
            emu.commit([("insert", "dbo.tickets", {"title": "c"})], at=at(2))
        assert caught.value.number == 8115
        assert [r["ticket_id"] for r in emu.rows("dbo.tickets")] == [250, 255]


@pytest.mark.parametrize(
    ("columns", "number"),
    [
        ({"a": "int identity", "b": "bigint identity(1, 1)"}, 2744),
        ({"a": "nvarchar(10) identity"}, 2749),
        ({"a": "decimal(10,0) identity"}, 2749),
        ({"a": "int identity(5)"}, None),
        ({"a": "int identity(1, 0)"}, None),
        ({"a": "smallint identity(40000, 1)"}, None),
    ],
    ids=[
        "two identity columns",
        "a character identity",
        "a decimal identity, not modelled",
        "a seed without an increment",
        "an increment of zero",
        "a seed outside the type",
    ],
)
def test_a_bad_identity_definition_is_refused_before_the_table_exists(
    tmp_path: Path, columns: dict[str, str], number: int | None
) -> None:
    with Emulator.create(tmp_path / "e.db") as emu:
        with pytest.raises(SchemaError) as caught:
            emu.create_table("dbo.t", columns)
        assert caught.value.number == number
        assert emu.tables() == []


def test_over_tds_an_insert_without_the_identity_takes_the_next_value(emu: Emulator) -> None:
    with emu.serve() as server:
        conn = connect(server, "pymssql")
        try:
            cursor = conn.cursor()
            cursor.execute("INSERT INTO dbo.tickets (title) VALUES ('a')")
            cursor.execute("INSERT INTO dbo.tickets VALUES ('b')")
            conn.commit()
            cursor.execute(
                "SELECT c.name, c.is_identity, c.is_nullable FROM sys.columns AS c "
                "WHERE c.object_id = OBJECT_ID('dbo.tickets') ORDER BY c.column_id"
            )
            catalog = cursor.fetchall()
            with pytest.raises(pymssql.Error) as caught:
                cursor.execute("INSERT INTO dbo.tickets (ticket_id, title) VALUES (9, 'c')")
        finally:
            conn.close()
    assert [r["ticket_id"] for r in emu.rows("dbo.tickets")] == [100, 107]
    assert catalog == [("ticket_id", True, False), ("title", False, True)]
    number, text = server_error(caught.value)
    assert number == 544
    assert text.startswith(
        "Cannot insert explicit value for identity column in table 'tickets' when "
        "IDENTITY_INSERT is set to OFF."
    )


LINES = {
    "line_id": "int",
    "price": "decimal(10,2)",
    "qty": "int",
    "sku": "nvarchar(10)",
    "total": "decimal(18,2) AS (price * qty)",
    "label": "nvarchar(30) AS (sku + N'-x')",
}


@pytest.fixture
def lines(tmp_path: Path) -> Iterator[Emulator]:
    emulator = Emulator.create(tmp_path / "e.db", start="2026-09-28T13:50:00")
    emulator.create_table("dbo.lines", LINES, primary_key="line_id")
    emulator.enable_cdc("dbo.lines")
    yield emulator
    emulator.close()


def test_the_source_table_shows_each_computed_value(lines: Emulator) -> None:
    given = [(1, "2.50", 3, "ab"), (2, "0.10", 7, None)]
    lines.commit(
        [
            ("insert", "dbo.lines", {"line_id": i, "price": Decimal(p), "qty": q, "sku": s})
            for i, p, q, s in given
        ],
        at=at(1),
    )
    assert [(r["total"], r["label"]) for r in lines.rows("dbo.lines")] == [
        (Decimal(p) * q, None if s is None else s + "-x") for _, p, q, s in given
    ]


def test_an_update_recomputes_the_source_value(lines: Emulator) -> None:
    lines.commit([("insert", "dbo.lines", {"line_id": 1, "price": 2, "qty": 3})], at=at(1))
    lines.commit([("update", "dbo.lines", {"line_id": 1, "qty": 5})], at=at(2))
    assert lines.rows("dbo.lines")[0]["total"] == Decimal("10.00")


def test_change_rows_hold_null_for_computed_columns(lines: Emulator) -> None:
    lines.commit(
        [("insert", "dbo.lines", {"line_id": 1, "price": 2, "qty": 3, "sku": "ab"})], at=at(1)
    )
    lines.commit([("update", "dbo.lines", {"line_id": 1, "qty": 5})], at=at(2))
    lines.commit([("delete", "dbo.lines", {"line_id": 1})], at=at(3))
    stored = raw_change_rows(lines.path, "dbo_lines")
    assert [r["__$operation"] for r in stored] == [2, 3, 4, 1]
    assert [(r["total"], r["label"]) for r in stored] == [(None, None)] * 4
    assert [r["qty"] for r in stored] == [3, 3, 5, 5]


def test_the_catalog_and_the_backends_mark_computed_columns(lines: Emulator) -> None:
    expected = {name: " AS " in sql_type for name, sql_type in LINES.items()}
    captured = lines.captured_columns("dbo_lines")
    assert {c["name"]: c["is_computed"] for c in captured} == expected
    backend = EmulatorBackend(str(lines.path))
    assert {c.name: c.is_computed for c in backend.captured_columns("dbo_lines")} == expected
    snapshots = EmulatorSnapshotReader(str(lines.path))
    assert {c.name: c.is_computed for c in snapshots.table_columns("dbo", "lines")} == expected


def test_the_sources_inferred_schema_leaves_computed_columns_out(lines: Emulator) -> None:
    config = SourceConfig.from_options(
        {"captureInstance": "dbo_lines", "backend": "emulator", "emulatorPath": str(lines.path)}
    )
    backend = open_backend(config)
    try:
        columns = declared_columns(
            backend.catalog, config, resolve_table(backend.catalog, "dbo_lines")
        )
    finally:
        backend.close()
    stored = [name for name, sql_type in LINES.items() if " AS " not in sql_type]
    assert [c.name for c in columns] == stored


def test_giving_a_computed_column_a_value_is_error_271(lines: Emulator) -> None:
    with pytest.raises(ConstraintError) as caught:
        lines.commit([("insert", "dbo.lines", {"line_id": 1, "total": 5})], at=at(1))
    assert caught.value.number == 271
    assert 'The column "total" cannot be modified because it is either a computed column' in str(
        caught.value
    )
    assert lines.rows("dbo.lines") == []


@pytest.mark.parametrize(
    ("expression_type", "number"),
    [
        ("int AS (nope + 1)", 207),
        ("decimal(18,2) AS (price / qty)", None),
        ("nvarchar(20) AS (sku + qty)", None),
        ("int AS (price * 2)", None),
        ("int AS (qty +)", None),
        ("decimal(38,2) AS (price * price * 0." + "0" * 34 + "1)", None),
    ],
    ids=[
        "an unknown column",
        "a decimal division, not modelled",
        "a string plus a number, not modelled",
        "a fraction into an integer type",
        "a syntax error",
        "a decimal scale past 38, not modelled",
    ],
)
def test_a_bad_computed_definition_is_refused_before_the_table_exists(
    tmp_path: Path, expression_type: str, number: int | None
) -> None:
    columns = {"price": "decimal(10,2)", "qty": "int", "sku": "nvarchar(10)", "c": expression_type}
    with Emulator.create(tmp_path / "e.db") as emu:
        with pytest.raises(SchemaError) as caught:
            emu.create_table("dbo.t", columns)
        assert caught.value.number == number
        assert emu.tables() == []


def test_a_computed_column_over_another_is_error_1759(tmp_path: Path) -> None:
    columns = {"a": "int", "b": "int AS (a * 2)", "c": "int AS (b + 1)"}
    with Emulator.create(tmp_path / "e.db") as emu:
        with pytest.raises(SchemaError) as caught:
            emu.create_table("dbo.t", columns)
        assert caught.value.number == 1759


def test_ddl_keeps_computed_columns_consistent(lines: Emulator) -> None:
    with pytest.raises(SchemaError) as dropped:
        lines.drop_column("dbo.lines", "qty", at=at(1))
    assert dropped.value.number == 5074
    with pytest.raises(SchemaError) as altered:
        lines.alter_column("dbo.lines", "total", "decimal(20,2)", at=at(1))
    assert altered.value.number == 4928
    lines.drop_column("dbo.lines", "total", at=at(2))
    lines.commit([("insert", "dbo.lines", {"line_id": 1, "price": 1, "qty": 2})], at=at(3))
    assert lines.rows("dbo.lines") == [
        {"line_id": 1, "price": Decimal("1.00"), "qty": 2, "sku": None, "label": None}
    ]


def test_over_tds_the_catalog_marks_computed_columns_and_inserts_compute_them(
    lines: Emulator,
) -> None:
    with lines.serve() as server:
        conn = connect(server, "pymssql")
        try:
            cursor = conn.cursor()
            cursor.execute("INSERT INTO dbo.lines (line_id, price, qty) VALUES (1, 1.25, 4)")
            conn.commit()
            cursor.execute(
                "SELECT name, is_computed FROM sys.columns "
                "WHERE object_id = OBJECT_ID('dbo.lines') ORDER BY column_id"
            )
            source = cursor.fetchall()
            cursor.execute(
                "SELECT column_name, is_computed FROM cdc.captured_columns ORDER BY column_ordinal"
            )
            captured = cursor.fetchall()
        finally:
            conn.close()
    expected = [(name, " AS " in sql_type) for name, sql_type in LINES.items()]
    assert source == expected
    assert captured == expected
    assert lines.rows("dbo.lines")[0]["total"] == Decimal("5.00")
