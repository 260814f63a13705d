"""Column types (spec 40, section 7): what goes in comes back, in rows() and in Arrow."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, time, timedelta, timezone
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

from mssql_cdc.emulator import ConstraintError, Emulator, SchemaError
from tests.unit.support.emulator_oracle import at

TYPES = {
    "id": "int",
    "flag": "bit",
    "tiny": "tinyint",
    "small": "smallint",
    "big": "bigint",
    "price": "decimal(38,4)",
    "cash": "money",
    "r": "real",
    "f": "float",
    "d": "date",
    "t": "time(7)",
    "dt": "datetime",
    "sdt": "smalldatetime",
    "dt2": "datetime2(3)",
    "dto": "datetimeoffset",
    "c": "char(5)",
    "nv": "nvarchar(max)",
    "g": "uniqueidentifier",
    "b": "binary(4)",
    "vb": "varbinary(10)",
}

ARROW = {
    "id": pa.int32(),
    "flag": pa.bool_(),
    "tiny": pa.int16(),
    "small": pa.int16(),
    "big": pa.int64(),
    "price": pa.decimal128(38, 4),
    "cash": pa.decimal128(19, 4),
    "r": pa.float32(),
    "f": pa.float64(),
    "d": pa.date32(),
    "t": pa.time64("ns"),  # 100 ns kept whole (decision 1347)
    "dt": pa.timestamp("us"),
    "sdt": pa.timestamp("us"),
    "dt2": pa.timestamp("us"),
    "dto": pa.timestamp("us", tz="UTC"),
    "c": pa.string(),
    "nv": pa.string(),
    "g": pa.string(),
    "b": pa.binary(),
    "vb": pa.binary(),
}

GUID = uuid.UUID("01234567-89ab-cdef-0123-456789abcdef")


@pytest.fixture
def emu(tmp_path: Path) -> Emulator:
    e = Emulator.create(tmp_path / "e.db")
    e.create_table("dbo.all_types", TYPES, primary_key="id")
    e.enable_cdc("dbo.all_types")
    return e


def test_every_type_round_trips_with_sql_server_rounding(emu: Emulator) -> None:
    row = {
        "id": 1,
        "flag": True,
        "tiny": 255,
        "small": -32768,
        "big": 2**63 - 1,
        "price": Decimal("12345678901234567890123456789012.34565"),
        "cash": 2.5,
        "r": 0.1,
        "f": 0.1,
        "d": date(1900, 1, 1),
        "t": time(23, 59, 59, 999_999),
        "dt": datetime(2026, 1, 2, 3, 4, 5, 2_000),
        "sdt": datetime(2026, 1, 2, 3, 4, 31),
        "dt2": datetime(2026, 1, 2, 3, 4, 5, 123_500),
        "dto": datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=2))),
        "c": "ab",
        "nv": "é" * 5000,
        "g": GUID,
        "b": b"\x01",
        "vb": bytearray(b"xyz"),
    }
    emu.commit([("insert", "dbo.all_types", row)], at=at(1))
    (got,) = emu.rows("dbo.all_types")
    assert got == {
        **row,
        "price": Decimal("12345678901234567890123456789012.3457"),  # half away from zero
        "cash": Decimal("2.5000"),
        "r": float(pa.scalar(0.1, pa.float32()).as_py()),
        "dt": datetime(2026, 1, 2, 3, 4, 5, 3_000),  # nearest 1/300 s tick
        "sdt": datetime(2026, 1, 2, 3, 5),  # nearest minute
        "dt2": datetime(2026, 1, 2, 3, 4, 5, 124_000),
        "dto": datetime(2026, 1, 2, 1, 4, 5, tzinfo=UTC),
        "c": "ab   ",
        "g": "01234567-89AB-CDEF-0123-456789ABCDEF",
        "b": b"\x01\x00\x00\x00",
        "vb": b"xyz",
    }


def test_change_reads_carry_the_arrow_type_of_every_column(emu: Emulator) -> None:
    emu.commit([("insert", "dbo.all_types", {"id": 1})], at=at(1))
    reader = emu.reader()
    table = reader.read_changes("dbo_all_types", reader.min_lsn("dbo_all_types"), reader.max_lsn())
    schema = table.schema
    for name, arrow_type in ARROW.items():
        assert schema.field(name).type == arrow_type, name
    assert {c["name"]: c["arrow_type"] for c in reader.captured_columns("dbo_all_types")} == {
        n: str(t) for n, t in ARROW.items()
    }


@pytest.mark.parametrize(
    ("column", "value", "error", "match"),
    [
        ("tiny", 256, ConstraintError, "8115"),
        ("c", "toolong", ConstraintError, "2628"),
        ("vb", b"x" * 11, ConstraintError, "2628"),
        ("price", Decimal("1e35"), ConstraintError, "8115"),
        ("id", True, TypeError, "bool"),
        ("d", datetime(2026, 1, 1), TypeError, "datetime"),
        ("g", "not-a-guid", ValueError, "uniqueidentifier"),
        ("f", [1], TypeError, "list"),
    ],
)
def test_values_that_do_not_fit_are_refused(
    emu: Emulator, column: str, value: object, error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        emu.commit([("insert", "dbo.all_types", {"id": 2, column: value})], at=at(1))


def test_unsupported_types_and_bad_keys_are_schema_errors(tmp_path: Path) -> None:
    emu = Emulator.create(tmp_path / "e.db")
    with pytest.raises(SchemaError, match=r"unknown or unsupported type name 'dbo\.money_t'"):
        emu.create_table("dbo.x", {"id": "int", "doc": "dbo.money_t"}, primary_key="id")
    with pytest.raises(SchemaError, match="cannot be part of the primary key"):
        emu.create_table("dbo.x", {"id": "hierarchyid"}, primary_key="id")
    with pytest.raises(SchemaError, match="cannot be part of the primary key"):
        emu.create_table("dbo.x", {"id": "nvarchar(max)"}, primary_key="id")
    with pytest.raises(SchemaError, match="not one of the columns"):
        emu.create_table("dbo.x", {"id": "int"}, primary_key="key")
    with pytest.raises(SchemaError, match="reserved"):
        emu.create_table("cdc.x", {"id": "int"}, primary_key="id")
    emu.create_table("dbo.x", {"id": "int"}, primary_key="id")
    with pytest.raises(SchemaError, match="2714"):
        emu.create_table("DBO.X", {"id": "int"}, primary_key="id")


def test_names_resolve_case_insensitively_and_keep_their_spelling(tmp_path: Path) -> None:
    emu = Emulator.create(tmp_path / "e.db")
    emu.create_table("Sales.OrderLines", {"LineId": "int", "Qty": "int"}, primary_key="LineId")
    emu.commit([("insert", "sales.orderlines", {"lineid": 1, "QTY": 2})], at=at(1))
    assert emu.rows("SALES.ORDERLINES") == [{"LineId": 1, "Qty": 2}]
    assert emu.tables() == ["Sales.OrderLines"]
    with pytest.raises(ValueError, match="twice"):
        emu.commit([("insert", "sales.orderlines", {"lineid": 2, "LineId": 2})], at=at(2))


def test_a_heap_updates_and_deletes_through_a_filter_matching_one_row(tmp_path: Path) -> None:
    emu = Emulator.create(tmp_path / "e.db")
    emu.create_table("dbo.h", {"a": "int", "b": "nvarchar(5)"})
    emu.enable_cdc("dbo.h")
    emu.commit(
        [("insert", "dbo.h", {"a": 2, "b": "x"}), ("insert", "dbo.h", {"a": 1, "b": None})],
        at=at(1),
    )
    emu.commit([("update", "dbo.h", {"b": "y"}, {"a": 2, "b": "x"})], at=at(2))
    assert emu.rows("dbo.h") == [{"a": 1, "b": None}, {"a": 2, "b": "y"}]
    ops = [r["__$operation"] for r in emu.change_rows("dbo_h")]
    assert ops == [2, 2, 3, 4]
    emu.commit([("insert", "dbo.h", {"a": 1, "b": None})], at=at(3))
    with pytest.raises(ConstraintError, match="more than one row"):
        emu.commit([("delete", "dbo.h", {"a": 1, "b": None})], at=at(4))
    with pytest.raises(ValueError, match="heap"):
        emu.commit([("update", "dbo.h", {"a": 3})], at=at(4))


@pytest.mark.parametrize("sql_type", ["sql_variant", "hierarchyid", "geometry", "geography"])
def test_types_without_a_spark_form_hold_bytes_and_keep_their_name(
    tmp_path: Path, sql_type: str
) -> None:
    """Held opaquely so the source's refusal of them can be tested (docs/emulator.md)."""
    emu = Emulator.create(tmp_path / "e.db")
    emu.create_table("dbo.odd", {"id": "int", "v": sql_type.upper()}, primary_key="id")
    emu.enable_cdc("dbo.odd")
    emu.commit([("insert", "dbo.odd", {"id": 1, "v": b"\x00\x01\xfe"})], at=at(1))
    assert emu.rows("dbo.odd") == [{"id": 1, "v": b"\x00\x01\xfe"}]
    assert [c["sql_type"] for c in emu.captured_columns("dbo_odd")] == ["int", sql_type]
    with pytest.raises(TypeError, match="does not take str"):
        emu.commit([("insert", "dbo.odd", {"id": 2, "v": "POINT(1 2)"})], at=at(2))
