"""T-SQL batches with variables over the emulator's TDS front end, through pymssql.

The oracle is Microsoft's documented example for cdc.fn_cdc_get_all_changes_<capture_instance>
(https://learn.microsoft.com/en-us/sql/relational-databases/system-functions/cdc-fn-cdc-get-all-changes-capture-instance-transact-sql),
sent as sqlcmd sends it (each batch up to a GO line), and plain Python over the rows committed
here: every change in the range, one row each, in commit order.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymssql
import pytest

from mssql_cdc.emulator import Emulator, TdsServer

# Microsoft's example, as the page shows it.
EXAMPLE = """USE AdventureWorks2022;
GO
DECLARE @from_lsn binary(10), @to_lsn binary(10);
SET @from_lsn = sys.fn_cdc_get_min_lsn('HR_Department');
SET @to_lsn   = sys.fn_cdc_get_max_lsn();
SELECT * FROM cdc.fn_cdc_get_all_changes_HR_Department
  (@from_lsn, @to_lsn, N'all');
GO
"""


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[Emulator]:
    emu = Emulator.create(tmp_path / "AdventureWorks2022.db", start="2026-09-28T13:50:00")
    emu.create_table(
        "HumanResources.Department",
        {"DepartmentID": "smallint", "Name": "nvarchar(50)"},
        primary_key="DepartmentID",
    )
    emu.enable_cdc("HumanResources.Department", capture_instance="HR_Department")
    table = "HumanResources.Department"
    emu.commit([("insert", table, {"DepartmentID": 1, "Name": "Engineering"})])
    emu.commit([("insert", table, {"DepartmentID": 2, "Name": "Tool Design"})])
    emu.commit([("update", table, {"DepartmentID": 1, "Name": "Research"})])
    yield emu
    emu.close()


@pytest.fixture
def server(emulator: Emulator) -> Iterator[TdsServer]:
    with emulator.serve() as srv:
        yield srv


def batches(script: str) -> list[str]:
    """The batches sqlcmd sends: the text between lines that hold only GO."""
    out: list[str] = []
    current: list[str] = []
    for line in script.splitlines():
        if line.strip().upper() == "GO":
            out.append("\n".join(current))
            current = []
        else:
            current.append(line)
    return [b for b in out if b.strip()]


def test_microsofts_all_changes_example_runs_unmodified_through_pymssql(
    server: TdsServer,
) -> None:
    conn: Any = pymssql.connect(**server.connect_kwargs("pymssql"), login_timeout=10)
    try:
        cursor = conn.cursor(as_dict=True)
        rows: list[dict[str, Any]] = []
        for batch in batches(EXAMPLE):
            cursor.execute(batch)
            if cursor.description is not None:
                rows = cursor.fetchall()
    finally:
        conn.close()
    # 'all': each change once, an update as its new values (operation 4), in commit order.
    assert [(r["__$operation"], r["DepartmentID"], r["Name"]) for r in rows] == [
        (2, 1, "Engineering"),
        (2, 2, "Tool Design"),
        (4, 1, "Research"),
    ]


def test_select_assignment_and_isnull_of_a_null_literal(server: TdsServer) -> None:
    conn: Any = pymssql.connect(**server.connect_kwargs("pymssql"), login_timeout=10)
    try:
        cursor = conn.cursor()
        cursor.execute(
            "DECLARE @name nvarchar(50); "
            "SELECT @name = Name FROM HumanResources.Department WHERE DepartmentID = 2; "
            "SELECT ISNULL(NULL, 'x') AS a, @name AS b, ISNULL(@name, N'none') AS c"
        )
        assert cursor.fetchall() == [("x", "Tool Design", "Tool Design")]
    finally:
        conn.close()


def test_a_date_string_passed_to_map_time_to_lsn_converts_to_datetime_as_sql_server_does(
    tmp_path: Path,
) -> None:
    """The tracking_time parameter is datetime, so a string argument converts implicitly, as
    the function's page shows with `'2007-01-01 12:00:00.000'`-style values
    (https://learn.microsoft.com/en-us/sql/relational-databases/system-functions/sys-fn-cdc-map-time-to-lsn-transact-sql).
    The oracle is the commit LSNs returned here and the times they were committed at."""
    emu = Emulator.create(tmp_path / "shop.db", start="2026-09-28T13:00:00")
    emu.create_table("dbo.t", {"id": "int"}, primary_key="id")
    emu.enable_cdc("dbo.t")
    first = emu.commit([("insert", "dbo.t", {"id": 1})], at="2026-09-28T13:50:00")
    second = emu.commit([("insert", "dbo.t", {"id": 2})], at="2026-09-28T14:10:00")
    try:
        with emu.serve() as srv:
            conn: Any = pymssql.connect(**srv.connect_kwargs("pymssql"), login_timeout=10)
            try:
                cursor = conn.cursor()
                cursor.execute(
                    "SELECT sys.fn_cdc_map_time_to_lsn('smallest greater than', "
                    "'2026-09-28 14:00:00'), "
                    "sys.fn_cdc_map_time_to_lsn('largest less than or equal', '20260928 14:00'), "
                    "sys.fn_cdc_map_time_to_lsn('smallest greater than or equal', "
                    "'2030-01-01')"
                )
                after, before, none = cursor.fetchone()
            finally:
                conn.close()
    finally:
        emu.close()
    assert after.hex() == second.removeprefix("0x").lower()
    assert before.hex() == first.removeprefix("0x").lower()
    assert none is None  # no commit at or after 2030: SQL Server answers NULL
