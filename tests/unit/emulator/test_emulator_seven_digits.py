"""time(7), datetime2(7) and datetimeoffset(7) keep 100 ns in the emulator (decision 1326).

Oracles: Microsoft's documentation of the types' accuracy, 100 nanoseconds, with seven
fractional digits (https://learn.microsoft.com/en-us/sql/t-sql/data-types/datetime2-transact-sql,
https://learn.microsoft.com/en-us/sql/t-sql/data-types/time-transact-sql,
https://learn.microsoft.com/en-us/sql/t-sql/data-types/datetimeoffset-transact-sql), and spec 10
§6.4 for the Arrow side: 100 ns are cut to microseconds. Values with a seventh digit can only come
in over TDS (a Python datetime stops at microseconds), so they are written as text literals.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, time
from pathlib import Path
from typing import Any

import pymssql
import pytest

from mssql_cdc.emulator import Emulator, EmulatorReader, TdsServer
from mssql_cdc.errors import ConfigError

AT = "2026-09-28T14:00:00"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[Emulator, TdsServer]]:
    emu = Emulator.create(tmp_path / "s.db", start="2026-09-28T13:50:00")
    emu.create_table(
        "dbo.t",
        {"k": "datetime2(7)", "t": "time(7)", "o": "datetimeoffset(7)", "d3": "datetime2(3)"},
        primary_key="k",
    )
    with emu.serve() as srv:
        yield emu, srv
    emu.close()


def run(srv: TdsServer, *statements: str) -> list[tuple[Any, ...]]:
    conn = pymssql.connect(**srv.connect_kwargs("pymssql"), login_timeout=10, timeout=10)
    try:
        cursor = conn.cursor()
        rows: list[tuple[Any, ...]] = []
        for sql in statements:
            cursor.execute(sql)
            if cursor.description is not None:
                rows = list(cursor.fetchall())
        conn.commit()
        return rows
    finally:
        conn.close()


def insert(srv: TdsServer, stamp: str) -> None:
    run(
        srv,
        f"INSERT INTO dbo.t (k, t, o, d3) VALUES ('2026-01-01 {stamp}', '1970-01-01 {stamp}', "
        f"'2026-01-01 {stamp}', '2026-01-01 {stamp}')",
    )


def test_the_seventh_fractional_digit_survives_a_round_trip_over_tds(
    server: tuple[Emulator, TdsServer],
) -> None:
    _, srv = server
    insert(srv, "12:00:00.1234567")
    got = run(
        srv,
        "SELECT CONVERT(varchar(40), k, 121), CONVERT(varchar(40), t, 114), "
        "CONVERT(varchar(40), o, 127), CONVERT(varchar(40), d3, 121) FROM dbo.t",
    )
    assert got == [
        (
            "2026-01-01 12:00:00.1234567",
            "12:00:00.1234567",
            "2026-01-01 12:00:00.1234567 +00:00",
            "2026-01-01 12:00:00.123",  # datetime2(3) keeps three digits
        )
    ]


def test_two_datetime2_7_keys_100_ns_apart_are_two_keys(server: tuple[Emulator, TdsServer]) -> None:
    emu, srv = server
    insert(srv, "12:00:00.1234567")
    insert(srv, "12:00:00.1234568")
    assert len(emu.rows("dbo.t")) == 2
    sql = "SELECT COUNT(*) FROM dbo.t WHERE k = CAST('2026-01-01 12:00:00.1234568' AS datetime2(7))"
    assert run(srv, sql) == [(1,)]


def test_arrow_and_python_values_cut_the_seventh_digit_toward_the_past(
    server: tuple[Emulator, TdsServer],
) -> None:
    emu, srv = server
    insert(srv, "12:00:00.1234569")
    (row,) = emu.rows("dbo.t")
    assert row["k"] == datetime(2026, 1, 1, 12, 0, 0, 123456)  # not rounded up to ...457
    assert row["t"] == time(12, 0, 0, 123456)
    assert row["o"] == datetime(2026, 1, 1, 12, 0, 0, 123456, tzinfo=UTC)


def test_values_from_python_read_back_over_tds_with_a_zero_seventh_digit(
    server: tuple[Emulator, TdsServer],
) -> None:
    emu, srv = server
    stamp = datetime(2026, 1, 1, 12, 0, 0, 654321)
    emu.commit([("insert", "dbo.t", {"k": stamp, "t": stamp.time(), "o": stamp})], at=AT)
    got = run(srv, "SELECT CONVERT(varchar(40), k, 121), CONVERT(varchar(40), t, 114) FROM dbo.t")
    assert got == [("2026-01-01 12:00:00.6543210", "12:00:00.6543210")]


def test_a_time_literal_without_a_date_goes_into_a_time_column_with_its_seven_digits(
    server: tuple[Emulator, TdsServer],
) -> None:
    """hh:mm:ss[.nnnnnnn] is time's own string literal format (the time page above); hh:mm
    alone is one too, with zero seconds."""
    _, srv = server
    run(
        srv,
        "INSERT INTO dbo.t (k, t) VALUES ('2026-01-01 00:00:01', '12:34:56.1234567')",
        "INSERT INTO dbo.t (k, t) VALUES ('2026-01-01 00:00:02', '08:15')",
    )
    got = run(srv, "SELECT CAST(t AS varchar(40)) FROM dbo.t ORDER BY k")
    assert got == [("12:34:56.1234567",), ("08:15:00.0000000",)]


def test_a_reader_asked_for_text_columns_writes_datetime2_and_datetimeoffset_with_their_digits(
    server: tuple[Emulator, TdsServer],
) -> None:
    """The CONVERT text (https://learn.microsoft.com/en-us/sql/t-sql/functions/cast-and-convert-transact-sql):
    seven digits for datetime2(7), three for datetime2(3), ` +00:00` after the instant the
    emulator keeps of a datetimeoffset; other columns keep their Arrow types."""
    emu, srv = server
    insert(srv, "12:00:00.1234567")
    reader = EmulatorReader(emu.path)
    table = reader.read_table("dbo.t", text_columns=["k", "o", "d3"]).read_all()
    assert table.column("k").to_pylist() == ["2026-01-01 12:00:00.1234567"]
    assert table.column("o").to_pylist() == ["2026-01-01 12:00:00.1234567 +00:00"]
    assert table.column("d3").to_pylist() == ["2026-01-01 12:00:00.123"]
    assert str(table.schema.field("t").type) == "time64[ns]"
    assert reader.read_table("dbo.t").read_all().column("k").to_pylist() == [
        datetime(2026, 1, 1, 12, 0, 0, 123456)
    ]


def test_a_reader_refuses_text_columns_naming_a_column_of_another_type(
    server: tuple[Emulator, TdsServer],
) -> None:
    emu, _ = server
    with pytest.raises(ConfigError, match="only datetime2 and datetimeoffset"):
        EmulatorReader(emu.path).read_table("dbo.t", text_columns=["t"]).read_all()
    with pytest.raises(ConfigError, match="not a column the read returns"):
        EmulatorReader(emu.path).read_table("dbo.t", columns=["k"], text_columns=["o"]).read_all()
