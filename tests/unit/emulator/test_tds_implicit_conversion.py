"""INSERT and UPDATE over the emulator's TDS front end convert each value to its column's type
as SQL Server's implicit conversion does, through pymssql, read back with a plain SELECT.

The oracle is Microsoft's documentation:
- INSERT converts each value to the column's data type; a value that is no value of the type
  fails the statement: https://learn.microsoft.com/en-us/sql/t-sql/statements/insert-transact-sql
- which pairs convert implicitly, which need CAST or CONVERT (error 257) and which never
  convert (error 206), the chart of
  https://learn.microsoft.com/en-us/sql/t-sql/data-types/data-type-conversion-database-engine
- the conversions themselves are CAST's: a decimal to an integer is truncated
  (CAST(10.6496 AS int) is 10), text that is no number is error 245 for an integer and 8114 for
  a decimal, a value out of range is 8115:
  https://learn.microsoft.com/en-us/sql/t-sql/functions/cast-and-convert-transact-sql
- the strings TRUE and FALSE convert to bit 1 and 0, and any nonzero number to 1:
  https://learn.microsoft.com/en-us/sql/t-sql/data-types/bit-transact-sql
- the message texts are sys.messages' 245, 248, 257, 206 and 8115.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pymssql
import pytest

from mssql_cdc.emulator import Emulator, TdsServer
from tests.unit.support.tds_clients import connect

TABLE = (
    "CREATE TABLE dbo.t (id int PRIMARY KEY, v nvarchar(10), d decimal(9,2), b bit, "
    "dt datetime2, f float, g uniqueidentifier, vb varbinary(10), old datetime, c char(3))"
)


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[Any]:
    emu = Emulator.create(tmp_path / "conv.db")
    server: TdsServer
    with emu.serve() as server:
        connection = connect(server)
        try:
            connection.cursor().execute(TABLE)
            yield connection
        finally:
            connection.close()
    emu.close()


def run(conn: Any, sql: str) -> None:
    conn.cursor().execute(sql)


def row(conn: Any, key: int, columns: str) -> tuple[Any, ...]:
    cursor = conn.cursor()
    cursor.execute(f"SELECT {columns} FROM dbo.t WHERE id = {key}")
    found = cursor.fetchall()
    assert len(found) == 1, found
    return tuple(found[0])


def keys(conn: Any) -> list[int]:
    cursor = conn.cursor()
    cursor.execute("SELECT id FROM dbo.t ORDER BY id")
    return [r[0] for r in cursor.fetchall()]


def error_of(conn: Any, sql: str) -> tuple[int, str]:
    """The number and the text of the SQL Server error `sql` raises."""
    with pytest.raises(pymssql.Error) as caught:
        run(conn, sql)
    number, raw = caught.value.args[0], caught.value.args[1]
    return int(number), raw.decode().split("DB-Lib error")[0]


def test_text_and_numbers_convert_to_the_columns_types_on_insert(conn: Any) -> None:
    run(conn, "INSERT INTO dbo.t (id, v) VALUES ('44', 5)")
    run(conn, "INSERT INTO dbo.t (id, d) VALUES (1, '12.5')")
    run(conn, "INSERT INTO dbo.t (id, f) VALUES (2, '1e3')")
    run(conn, "INSERT INTO dbo.t (id, v) VALUES (3, 1.50)")
    run(conn, "INSERT INTO dbo.t (id, d) VALUES (4.99, 7)")  # truncated to 4, as CAST does
    run(conn, "INSERT INTO dbo.t (id, c) VALUES (5, 7)")  # char(3) pads with spaces
    assert row(conn, 44, "v") == ("5",)
    assert row(conn, 1, "d") == (Decimal("12.50"),)
    assert row(conn, 2, "f") == (1000.0,)
    assert row(conn, 3, "v") == ("1.50",)
    assert row(conn, 4, "d") == (Decimal("7.00"),)
    assert row(conn, 5, "c") == ("7  ",)


def test_true_false_and_nonzero_numbers_convert_to_bit(conn: Any) -> None:
    run(conn, "INSERT INTO dbo.t (id, b) VALUES (1, 'true'), (2, 'FALSE'), (3, 7), (4, '0')")
    assert [row(conn, k, "b")[0] for k in (1, 2, 3, 4)] == [True, False, True, False]


def test_text_converts_to_date_and_time_and_uniqueidentifier(conn: Any) -> None:
    run(conn, "INSERT INTO dbo.t (id, dt) VALUES (3, '2024-01-02 03:04:05')")
    run(conn, "INSERT INTO dbo.t (id, g) VALUES (4, '6F9619FF-8B86-D011-B42D-00C04FC964FF')")
    assert row(conn, 3, "dt") == (datetime.datetime(2024, 1, 2, 3, 4, 5),)
    (guid,) = row(conn, 4, "CONVERT(nvarchar(36), g)")
    assert guid.upper() == "6F9619FF-8B86-D011-B42D-00C04FC964FF"


def test_binary_converts_to_text_and_to_integers_and_integers_to_binary(conn: Any) -> None:
    run(conn, "INSERT INTO dbo.t (id, v) VALUES (0x0000002A, 0x4142)")
    run(conn, "INSERT INTO dbo.t (id, vb) VALUES (1, 5)")
    assert row(conn, 42, "v") == ("AB",)
    assert row(conn, 1, "vb") == (b"\x00\x00\x00\x05",)  # an int's four bytes, big-endian


def test_an_integer_into_datetime_counts_days_from_1900_01_01(conn: Any) -> None:
    run(conn, "INSERT INTO dbo.t (id, old) VALUES (1, 2)")
    expected = datetime.datetime(1900, 1, 1) + datetime.timedelta(days=2)
    assert row(conn, 1, "old") == (expected,)


def test_insert_select_and_update_set_convert_the_same_way(conn: Any) -> None:
    run(conn, "INSERT INTO dbo.t (id, v) SELECT '77', 12")
    run(conn, "INSERT INTO dbo.t (id, d) VALUES (44, 1)")
    run(conn, "UPDATE dbo.t SET id = '45', d = '3.25' WHERE id = 44")
    assert row(conn, 77, "v") == ("12",)
    assert row(conn, 45, "d") == (Decimal("3.25"),)
    assert keys(conn) == [45, 77]


def test_text_that_is_no_integer_is_error_245_and_inserts_nothing(conn: Any) -> None:
    assert error_of(conn, "INSERT INTO dbo.t (id) VALUES ('abc')") == (
        245,
        "Conversion failed when converting the varchar value 'abc' to data type int.",
    )
    assert error_of(conn, "INSERT INTO dbo.t (id, b) VALUES (1, 'yes')") == (
        245,
        "Conversion failed when converting the varchar value 'yes' to data type bit.",
    )
    assert keys(conn) == []


def test_text_that_is_no_number_for_a_decimal_is_error_8114(conn: Any) -> None:
    number, text = error_of(conn, "INSERT INTO dbo.t (id, d) VALUES (1, 'x')")
    assert (number, text) == (8114, "Error converting data type varchar to numeric.")


def test_a_number_too_large_for_the_column_is_error_8115(conn: Any) -> None:
    assert error_of(conn, "INSERT INTO dbo.t (id) SELECT 99999999999") == (
        8115,
        "Arithmetic overflow error converting expression to data type int.",
    )
    assert error_of(conn, "INSERT INTO dbo.t (id, d) VALUES (1, 12345678.5)") == (
        8115,
        "Arithmetic overflow error converting numeric to data type numeric.",
    )
    assert keys(conn) == []


def test_text_too_large_for_an_integer_column_is_error_248(conn: Any) -> None:
    number, text = error_of(conn, "INSERT INTO dbo.t (id) VALUES ('99999999999')")
    assert number == 248
    assert text.startswith(
        "The conversion of the varchar value '99999999999' overflowed an int column."
    )


def test_pairs_sql_server_converts_only_explicitly_are_error_257(conn: Any) -> None:
    assert error_of(conn, "INSERT INTO dbo.t (id, vb) VALUES (1, 'abc')") == (
        257,
        "Implicit conversion from data type varchar to varbinary is not allowed. "
        "Use the CONVERT function to run this query.",
    )
    number, _ = error_of(conn, "INSERT INTO dbo.t (id) VALUES (CAST('2024-01-01' AS datetime))")
    assert number == 257
    assert keys(conn) == []


def test_pairs_sql_server_never_converts_are_error_206(conn: Any) -> None:
    assert error_of(conn, "INSERT INTO dbo.t (id) VALUES (CAST('2024-01-01' AS datetime2))") == (
        206,
        "Operand type clash: datetime2 is incompatible with int",
    )
    assert error_of(conn, "INSERT INTO dbo.t (id, g) VALUES (1, 5)") == (
        206,
        "Operand type clash: int is incompatible with uniqueidentifier",
    )
    assert error_of(conn, "INSERT INTO dbo.t (id, dt) VALUES (1, 5)") == (
        206,
        "Operand type clash: int is incompatible with datetime2",
    )
    assert keys(conn) == []


@pytest.mark.parametrize("driver", ["pymssql", "mssql-python", "python-tds"])
def test_parameters_convert_to_the_columns_types_as_literals_do(
    tmp_path: Path, driver: str
) -> None:
    """A driver's typed parameter (sp_executesql's for mssql-python and python-tds) converts
    as a literal does: a text key into int, a number into nvarchar."""
    emu = Emulator.create(tmp_path / "params.db")
    emu.create_table("dbo.p", {"id": "int", "v": "nvarchar(10)"}, primary_key="id")
    marker = "?" if driver == "mssql-python" else "%s"
    with emu.serve() as server:
        connection = connect(server, driver)
        try:
            cursor = connection.cursor()
            cursor.execute(f"INSERT INTO dbo.p (id, v) VALUES ({marker}, {marker})", ("44", 5))
            connection.commit()
        finally:
            connection.close()
        checker = connect(server)
        try:
            cursor = checker.cursor()
            cursor.execute("SELECT id, v FROM dbo.p")
            assert [tuple(r) for r in cursor.fetchall()] == [(44, "5")]
        finally:
            checker.close()
    emu.close()
