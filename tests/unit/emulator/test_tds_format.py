"""FORMAT over the emulator's TDS front end, through pymssql, for the en-US culture.

The oracle is Microsoft's documentation:
- FORMAT (its examples: 'd' and 'D' of 2020-11-22, '###-##-####' of 123456789, 'N', 'G' and
  'C' of money values, time values with escaped separators, 'hh:mm tt'; NULL for a format
  .NET rejects): https://learn.microsoft.com/en-us/sql/t-sql/functions/format-transact-sql
- .NET's standard and custom numeric format strings, en-US:
  https://learn.microsoft.com/en-us/dotnet/standard/base-types/standard-numeric-format-strings
  https://learn.microsoft.com/en-us/dotnet/standard/base-types/custom-numeric-format-strings
- .NET's standard date and time format strings (en-US 'd' is M/d/yyyy, 'o' round-trips, 'u'
  is UTC): https://learn.microsoft.com/en-us/dotnet/standard/base-types/standard-date-and-time-format-strings
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pymssql
import pytest

from mssql_cdc.emulator import Emulator, TdsServer


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TdsServer]:
    emu = Emulator.create(tmp_path_factory.mktemp("format") / "shop.db")
    with emu.serve() as srv:
        yield srv
    emu.close()


def row(server: TdsServer, sql: str) -> tuple[Any, ...]:
    conn: Any = pymssql.connect(**server.connect_kwargs("pymssql"), login_timeout=10)
    try:
        cursor = conn.cursor()
        cursor.execute(sql)
        got: tuple[Any, ...] = cursor.fetchone()
        return got
    finally:
        conn.close()


def test_the_pages_date_examples_in_en_us(server: TdsServer) -> None:
    d = "CAST('2020-11-22' AS date)"
    assert row(
        server,
        f"SELECT FORMAT({d}, 'd', 'en-US'), FORMAT({d}, 'D', 'en-US'), "
        f"FORMAT({d}, 'dd/MM/yyyy', 'en-US')",
    ) == ("11/22/2020", "Sunday, November 22, 2020", "22/11/2020")


def test_the_pages_custom_number_and_money_examples(server: TdsServer) -> None:
    assert row(server, "SELECT FORMAT(123456789, '###-##-####')") == ("123-45-6789",)
    for rate, general, numeric, currency in [
        ("1.00", "1.0000", "1.00", "$1.00"),
        ("1.5335", "1.5335", "1.53", "$1.53"),
        ("1.9419", "1.9419", "1.94", "$1.94"),
    ]:
        m = f"CAST({rate} AS money)"
        got = row(
            server,
            f"SELECT FORMAT({m}, 'N', 'en-us'), FORMAT({m}, 'G', 'en-us'), "
            f"FORMAT({m}, 'C', 'en-us')",
        )
        assert got == (numeric, general, currency)


def test_a_time_value_needs_its_separators_escaped_else_null(server: TdsServer) -> None:
    t = "CAST('07:35' AS time)"
    got = row(
        server,
        f"SELECT FORMAT({t}, N'hh.mm'), FORMAT({t}, N'hh\\.mm'), FORMAT({t}, N'hh\\:mm')",
    )
    assert got == (None, "07.35", "07:35")


def test_twelve_hour_clocks_and_round_trip_dates(server: TdsServer) -> None:
    at = "CAST('2026-09-28 15:46:01.25' AS datetime2)"
    got = row(
        server,
        f"SELECT FORMAT({at}, N'hh:mm tt'), FORMAT({at}, N'hh:mm t'), FORMAT({at}, 'o'), "
        f"FORMAT({at}, 's'), FORMAT({at}, 'yyyy-MM-dd HH:mm:ss.fff')",
    )
    assert got == (
        "03:46 PM",
        "03:46 P",
        "2026-09-28T15:46:01.2500000",
        "2026-09-28T15:46:01",
        "2026-09-28 15:46:01.250",
    )


def test_an_offset_value_formats_in_its_own_offset_and_u_in_utc(server: TdsServer) -> None:
    at = "CAST('2026-09-28 15:46:01 +02:00' AS datetimeoffset)"
    got = row(server, f"SELECT FORMAT({at}, 'u'), FORMAT({at}, 'yyyy-MM-dd HH:mm zzz')")
    assert got == ("2026-09-28 13:46:01Z", "2026-09-28 15:46 +02:00")


def test_standard_numeric_formats_round_half_away_from_zero(server: TdsServer) -> None:
    got = row(
        server,
        "SELECT FORMAT(1234567.891, 'N2'), FORMAT(2.5, 'N0'), FORMAT(-2.5, 'F0'), "
        "FORMAT(1.005, 'F2'), FORMAT(42, 'D5'), FORMAT(255, 'X4'), FORMAT(-1, 'X'), "
        "FORMAT(1234.5, 'E2'), FORMAT(CAST(0.1 AS float) + CAST(0.2 AS float), 'N2')",
    )
    assert got == (
        "1,234,567.89",
        "3",
        "-3",
        "1.01",
        "00042",
        "00FF",
        "FFFFFFFF",
        "1.23E+003",
        "0.30",
    )


def test_custom_numeric_sections_grouping_and_percent(server: TdsServer) -> None:
    got = row(
        server,
        "SELECT FORMAT(1234.5, '#,##0.00'), FORMAT(-5, '0;(0)'), FORMAT(0, '0;(0);zero'), "
        "FORMAT(0.5, '0%'), FORMAT(7, '000')",
    )
    assert got == ("1,234.50", "(5)", "zero", "50%", "007")


def test_a_format_dotnet_rejects_gives_null(server: TdsServer) -> None:
    got = row(
        server,
        "SELECT FORMAT(1, 'Q'), FORMAT(1.5, 'D'), FORMAT(NULL, 'N'), FORMAT(1, NULL), "
        "FORMAT(GETDATE(), 'Q')",
    )
    assert got == (None, None, None, None, None)


def test_text_is_no_value_to_format_error_8116(server: TdsServer) -> None:
    with pytest.raises(pymssql.Error) as raised:
        row(server, "SELECT FORMAT('abc', 'N')")
    assert raised.value.args[0] == 8116
