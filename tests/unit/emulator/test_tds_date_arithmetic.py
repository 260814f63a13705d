"""datetime arithmetic over the emulator's TDS front end, through pymssql.

The oracle is Microsoft's operator pages and Python's datetime:
- + (Addition) adds a number of days to a datetime:
  https://learn.microsoft.com/en-us/sql/t-sql/language-elements/add-transact-sql
- - (Subtraction) subtracts days, fractions of a day too (its example: 1.5 days):
  https://learn.microsoft.com/en-us/sql/t-sql/language-elements/subtract-transact-sql
- datetime's range is 1753-01-01 to 9999-12-31; a sum past it is error 517:
  https://learn.microsoft.com/en-us/sql/t-sql/data-types/datetime-transact-sql
- datetime2 takes no number: error 206, operand type clash:
  https://learn.microsoft.com/en-us/sql/t-sql/data-types/datetime2-transact-sql
- DATEDIFF counts datepart boundaries crossed; its page's example of two instants 100 ns apart
  returns 1 for every datepart, and weeks start on Sunday whatever SET DATEFIRST says:
  https://learn.microsoft.com/en-us/sql/t-sql/functions/datediff-transact-sql
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pymssql
import pytest

from mssql_cdc.emulator import Emulator, TdsServer


@pytest.fixture
def server(tmp_path: Path) -> Iterator[TdsServer]:
    emu = Emulator.create(tmp_path / "shop.db", start="2026-09-28T13:50:00")
    with emu.serve() as srv:
        yield srv
    emu.close()


def one(server: TdsServer, sql: str) -> Any:
    conn: Any = pymssql.connect(**server.connect_kwargs("pymssql"), login_timeout=10)
    try:
        cursor = conn.cursor()
        cursor.execute(sql)
        return cursor.fetchone()[0]
    finally:
        conn.close()


def error_number(server: TdsServer, sql: str) -> int:
    with pytest.raises(pymssql.Error) as raised:
        one(server, sql)
    number: int = raised.value.args[0]
    return number


AT = datetime(2026, 9, 28, 14, 0)
LITERAL = "CAST('2026-09-28 14:00' AS datetime)"


def test_a_number_of_days_adds_to_and_subtracts_from_a_datetime(server: TdsServer) -> None:
    assert one(server, f"SELECT {LITERAL} - 1") == AT - timedelta(days=1)
    assert one(server, f"SELECT {LITERAL} - 1.5") == AT - timedelta(days=1.5)
    assert one(server, f"SELECT {LITERAL} + 0.25") == AT + timedelta(hours=6)
    assert one(server, f"SELECT 3 + {LITERAL}") == AT + timedelta(days=3)


def test_getdate_minus_one_is_a_day_before_getdate(server: TdsServer) -> None:
    got = one(server, "SELECT DATEDIFF(hour, GETDATE() - 1, GETDATE())")
    assert got == 24


def test_a_datetime_minus_a_datetime_counts_from_1900(server: TdsServer) -> None:
    got = one(server, f"SELECT {LITERAL} - CAST('2026-09-27 02:00' AS datetime)")
    assert got == datetime(1900, 1, 1) + (AT - datetime(2026, 9, 27, 2, 0))


def test_a_sum_past_datetimes_range_is_error_517(server: TdsServer) -> None:
    assert error_number(server, "SELECT CAST('9999-12-31' AS datetime) + 1") == 517
    assert error_number(server, "SELECT CAST('1753-01-01' AS datetime) - 1") == 517


def test_datetime2_plus_a_number_is_an_operand_clash_206(server: TdsServer) -> None:
    assert error_number(server, "SELECT CAST('2026-09-28' AS datetime2) - 1") == 206
    assert error_number(server, "SELECT 1 + CAST('2026-09-28' AS date)") == 206


PARTS = "year quarter month dayofyear day week hour minute second millisecond microsecond"


@pytest.mark.parametrize("part", PARTS.split())
def test_datediff_counts_one_boundary_between_instants_100_ns_apart(
    server: TdsServer, part: str
) -> None:
    sql = f"SELECT DATEDIFF({part}, '2005-12-31 23:59:59.9999999', '2006-01-01 00:00:00.0000000')"
    assert one(server, sql) == 1


def test_datediff_counts_the_nanoseconds_between_instants_100_ns_apart(server: TdsServer) -> None:
    apart = "'2005-12-31 23:59:59.9999999', '2006-01-01 00:00:00.0000000'"
    assert one(server, f"SELECT DATEDIFF(nanosecond, {apart})") == 100


def test_datediff_counts_boundaries_not_elapsed_time(server: TdsServer) -> None:
    # Saturday 2026-10-03 to Sunday 2026-10-04 crosses one week boundary; Sunday to Saturday none.
    assert one(server, "SELECT DATEDIFF(week, '2026-10-03', '2026-10-04')") == 1
    assert one(server, "SELECT DATEDIFF(week, '2026-10-04', '2026-10-10')") == 0
    assert one(server, "SELECT DATEDIFF(month, '2026-01-31', '2026-02-01')") == 1
    assert one(server, "SELECT DATEDIFF(day, '2026-10-04 23:00', '2026-10-03 01:00')") == -1
    assert one(server, "SELECT DATEDIFF(hour, NULL, GETDATE())") is None


def test_datediff_past_int_is_error_535_and_datediff_big_holds_it(server: TdsServer) -> None:
    start, end = "'2000-01-01'", "'2100-01-01'"
    assert error_number(server, f"SELECT DATEDIFF(millisecond, {start}, {end})") == 535
    elapsed = datetime(2100, 1, 1) - datetime(2000, 1, 1)
    got = one(server, f"SELECT DATEDIFF_BIG(millisecond, {start}, {end})")
    assert got == elapsed // timedelta(milliseconds=1)
