"""Microsoft's documented CDC walkthrough, typed into FreeTDS's `tsql` (Debian's freetds-bin)
against `mssql-cdc emulator serve`: a client nobody here wrote, sending the statements a DBA
copies from the documentation (decision 1438).

The script is written from the statements of these pages, unmodified except for the table and
capture instance names and a key-based WHERE (the emulator changes rows by key):
- https://learn.microsoft.com/en-us/sql/relational-databases/track-changes/enable-and-disable-change-data-capture-sql-server
  (sys.sp_cdc_enable_db, sys.sp_cdc_enable_table, sys.sp_cdc_disable_table, sys.sp_cdc_disable_db)
- https://learn.microsoft.com/en-us/sql/relational-databases/system-functions/cdc-fn-cdc-get-all-changes-capture-instance-transact-sql
  (DECLARE @from_lsn binary(10), @to_lsn binary(10) from fn_cdc_get_min_lsn / get_max_lsn)
- https://learn.microsoft.com/en-us/sql/relational-databases/system-functions/cdc-fn-cdc-get-net-changes-capture-instance-transact-sql
  (the time window mapped by sys.fn_cdc_map_time_to_lsn)
- https://learn.microsoft.com/en-us/sql/relational-databases/system-functions/sys-fn-cdc-get-column-ordinal-transact-sql
  (the ordinal and sys.fn_cdc_is_bit_set over net changes 'all with mask')
- https://learn.microsoft.com/en-us/sql/relational-databases/system-functions/sys-fn-cdc-increment-lsn-transact-sql
  (the next query's lower bound)
- https://learn.microsoft.com/en-us/sql/relational-databases/system-stored-procedures/sys-sp-cdc-get-ddl-history-transact-sql
- https://learn.microsoft.com/en-us/sql/relational-databases/system-stored-procedures/sys-sp-cdc-change-job-transact-sql
  (@job_type = N'cleanup', @retention = 2880)

The oracle is what those pages say each statement returns; the expected rows are the changes
the script itself makes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mssql_cdc.emulator import Emulator

PASSWORD = "Walkthrough-1"
DATABASE = "AdventureWorks2022"  # the pages' database, as the file's stem names it

WALKTHROUGH = """\
USE AdventureWorks2022;
GO
CREATE TABLE HumanResources.Department (
    DepartmentID smallint NOT NULL PRIMARY KEY,
    Name nvarchar(50) NOT NULL,
    GroupName nvarchar(50) NOT NULL,
    ModifiedDate datetime NOT NULL
)
GO
-- Enable for a database
EXEC sys.sp_cdc_enable_db
GO
-- Enable for a table, supporting net changes
EXEC sys.sp_cdc_enable_table
@source_schema = N'HumanResources',
@source_name   = N'Department',
@role_name     = NULL,
@supports_net_changes = 1
GO
DECLARE @begin_time datetime, @end_time datetime, @from_lsn binary(10), @to_lsn binary(10);
-- Obtain the beginning of the time interval.
SET @begin_time = DATEADD(day, -1, GETDATE()) ;
-- DML statements to produce changes in the HumanResources.Department table.
INSERT INTO HumanResources.Department (DepartmentID, Name, GroupName, ModifiedDate)
VALUES (1, N'MyDept', N'MyDivision', GETDATE());
INSERT INTO HumanResources.Department (DepartmentID, Name, GroupName, ModifiedDate)
VALUES (2, N'Tool Design', N'Research and Development', GETDATE());

UPDATE HumanResources.Department
SET GroupName = N'Resale'
WHERE Name = N'MyDept';

DELETE FROM HumanResources.Department WHERE Name = N'Tool Design';

-- Obtain the end of the time interval.
SET @end_time = GETDATE();
-- Map the time interval to a change data capture query range.
SET @from_lsn = sys.fn_cdc_map_time_to_lsn('smallest greater than or equal', @begin_time);
SET @to_lsn = sys.fn_cdc_map_time_to_lsn('largest less than or equal', @end_time);

-- Return the net changes occurring within the query window.
SELECT __$operation, DepartmentID, Name, GroupName
FROM cdc.fn_cdc_get_net_changes_HumanResources_Department(@from_lsn, @to_lsn, 'all');
GO
DECLARE @from_lsn binary(10), @to_lsn binary(10);
SET @from_lsn = sys.fn_cdc_get_min_lsn('HumanResources_Department');
SET @to_lsn   = sys.fn_cdc_get_max_lsn();
SELECT __$operation, DepartmentID, Name, GroupName
FROM cdc.fn_cdc_get_all_changes_HumanResources_Department
  (@from_lsn, @to_lsn, N'all');
GO
DECLARE @from_lsn binary(10), @to_lsn binary(10), @NameOrdinal int;
SET @from_lsn = sys.fn_cdc_increment_lsn(sys.fn_cdc_get_max_lsn());
UPDATE HumanResources.Department SET Name = N'Sales' WHERE Name = N'MyDept';
SET @to_lsn = sys.fn_cdc_get_max_lsn();
SET @NameOrdinal = sys.fn_cdc_get_column_ordinal
    ( 'HumanResources_Department','Name');
SELECT __$operation, DepartmentID, Name,
    sys.fn_cdc_is_bit_set(@NameOrdinal, __$update_mask) as 'NameChanged',
    sys.fn_cdc_has_column_changed('HumanResources_Department', 'GroupName', __$update_mask)
        as 'GroupNameChanged'
FROM cdc.fn_cdc_get_net_changes_HumanResources_Department
    ( @from_lsn, @to_lsn, 'all with mask');
GO
ALTER TABLE HumanResources.Department ADD Budget money NULL
GO
EXECUTE sys.sp_cdc_get_ddl_history @capture_instance = 'HumanResources_Department';
GO
EXECUTE sys.sp_cdc_change_job
    @job_type = N'cleanup',
    @retention = 2880;
GO
EXEC sys.sp_cdc_help_jobs
GO
-- Disable for a table
EXEC sys.sp_cdc_disable_table
@source_schema = N'HumanResources',
@source_name   = N'Department',
@capture_instance = N'HumanResources_Department'
GO
SELECT COUNT(*) AS instances FROM cdc.change_tables
GO
-- Disable for a database
EXEC sys.sp_cdc_disable_db
GO
"""


@pytest.fixture
def port(tmp_path: Path) -> Iterator[int]:
    assert shutil.which("tsql"), "FreeTDS's tsql is missing: `make setup` installs freetds-bin"
    path = tmp_path / f"{DATABASE}.db"
    Emulator.create(path, start="2026-09-28T13:50:00").close()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mssql_cdc.cli", "emulator", "serve", str(path)],
        stdout=subprocess.PIPE,
        text=True,
        env=os.environ | {"MSSQL_CDC_EMULATOR_PASSWORD": PASSWORD},
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # "serving PATH as database '...' on 127.0.0.1:PORT"
        yield int(first.rsplit(":", 1)[1])
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def tsql(port: int, script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["tsql", "-H", "127.0.0.1", "-p", str(port), "-U", "sa", "-P", PASSWORD, "-D", DATABASE,
         "-o", "q"],
        input=script, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def result_rows(output: str) -> list[list[str]]:
    """tsql's data lines (tab-separated columns), without headers, counts or messages."""
    return [line.split("\t") for line in output.splitlines() if "\t" in line]


def test_the_documented_cdc_walkthrough_runs_unmodified_through_tsql(port: int) -> None:
    done = tsql(port, WALKTHROUGH)
    assert "Msg " not in done.stdout + done.stderr, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    # Net changes over the window: one row per changed key with its final values; the row
    # inserted and deleted inside the window has no net change (fn_cdc_get_net_changes page).
    net_at = lines.index("__$operation\tDepartmentID\tName\tGroupName")
    assert lines[net_at + 1 : net_at + 2] == ["2\t1\tMyDept\tResale"]
    # All changes in LSN order: 2 = insert, 4 = update (new values), 1 = delete.
    all_at = lines.index("__$operation\tDepartmentID\tName\tGroupName", net_at + 1)
    assert lines[all_at + 1 : all_at + 5] == [
        "2\t1\tMyDept\tMyDivision",
        "2\t2\tTool Design\tResearch and Development",
        "4\t1\tMyDept\tResale",
        "1\t2\tTool Design\tResearch and Development",
    ]
    # The update mask of the window's one update: Name changed, GroupName did not
    # (sys.fn_cdc_get_column_ordinal, sys.fn_cdc_is_bit_set, sys.fn_cdc_has_column_changed).
    mask_at = lines.index("__$operation\tDepartmentID\tName\tNameChanged\tGroupNameChanged")
    assert lines[mask_at + 1] == "4\t1\tSales\t1\t0"
    # The ALTER TABLE is in the instance's DDL history (sys.sp_cdc_get_ddl_history).
    history = next(row for row in result_rows(done.stdout) if "ddl_command" in row)
    entries = [
        dict(zip(history, row, strict=True))
        for row in result_rows(done.stdout)
        if len(row) == len(history) and row != history
    ]
    assert [(e["capture_instance"], e["required_column_update"]) for e in entries] == [
        ("HumanResources_Department", "0")
    ]
    assert "Budget" in entries[0]["ddl_command"]
    # sp_cdc_change_job's new retention shows in sp_cdc_help_jobs' cleanup row
    # (https://learn.microsoft.com/en-us/sql/relational-databases/system-stored-procedures/
    # sys-sp-cdc-help-jobs-transact-sql).
    header = next(row for row in result_rows(done.stdout) if "retention" in row)
    jobs = [
        dict(zip(header, row, strict=True))
        for row in result_rows(done.stdout)
        if len(row) == len(header)
    ]
    assert [job["retention"] for job in jobs if job["job_type"] == "cleanup"] == ["2880"]
    assert lines[lines.index("instances") + 1] == "0"
