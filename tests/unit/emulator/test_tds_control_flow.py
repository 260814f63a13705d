"""Control of flow in T-SQL batches over the emulator's TDS front end, through pymssql.

The oracle is Microsoft's T-SQL reference and plain Python:
- WHILE, BREAK, CONTINUE: https://learn.microsoft.com/en-us/sql/t-sql/language-elements/while-transact-sql
- BEGIN...END: https://learn.microsoft.com/en-us/sql/t-sql/language-elements/begin-end-transact-sql
- TRY...CATCH and ERROR_NUMBER()/ERROR_MESSAGE(): https://learn.microsoft.com/en-us/sql/t-sql/language-elements/try-catch-transact-sql
- THROW (severity 16, a re-throw inside CATCH): https://learn.microsoft.com/en-us/sql/t-sql/language-elements/throw-transact-sql
- RAISERROR (printf-style %s and %d): https://learn.microsoft.com/en-us/sql/t-sql/language-elements/raiserror-transact-sql
- @@ERROR: https://learn.microsoft.com/en-us/sql/t-sql/functions/error-transact-sql
- @@SPID: https://learn.microsoft.com/en-us/sql/t-sql/functions/spid-transact-sql
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymssql
import pytest

from mssql_cdc.emulator import Emulator, TdsServer


@pytest.fixture
def server(tmp_path: Path) -> Iterator[TdsServer]:
    emu = Emulator.create(tmp_path / "shop.db", start="2026-09-28T13:50:00")
    emu.create_table(
        "dbo.orders", {"order_id": "int", "status": "nvarchar(20)"}, primary_key="order_id"
    )
    emu.commit([("insert", "dbo.orders", {"order_id": 1, "status": "new"})])
    with emu.serve() as srv:
        yield srv
    emu.close()


def connect(server: TdsServer) -> Any:
    return pymssql.connect(**server.connect_kwargs("pymssql"), login_timeout=10)


def test_a_while_loop_inserts_rows_and_reports_them_through_pymssql(server: TdsServer) -> None:
    conn = connect(server)
    try:
        cursor = conn.cursor()
        cursor.execute(
            """
            DECLARE @i int = 1, @key int
            WHILE @i <= 10
            BEGIN
                SET @i = @i + 1
                IF @i % 2 = 1 CONTINUE
                IF @i > 8 BREAK
                SET @key = @i * 10
                INSERT INTO dbo.orders (order_id, status) VALUES (@key, N'loop')
            END
            SELECT order_id FROM dbo.orders WHERE status = N'loop' ORDER BY order_id
            """
        )
        got = [row[0] for row in cursor.fetchall()]
    finally:
        conn.close()
    expected = []
    i = 1
    while i <= 10:
        i += 1
        if i % 2 == 1:
            continue
        if i > 8:
            break
        expected.append(i * 10)
    assert got == expected == [20, 40, 60, 80]


def test_catch_reads_the_error_its_try_raised_through_pymssql(server: TdsServer) -> None:
    conn = connect(server)
    try:
        cursor = conn.cursor()
        cursor.execute(
            "BEGIN TRY\n"
            "  INSERT INTO dbo.orders (order_id, status) VALUES (1, N'again')\n"
            "END TRY\n"
            "BEGIN CATCH\n"
            "  SELECT ERROR_NUMBER() AS n, ERROR_SEVERITY() AS s, @@ERROR AS e\n"
            "END CATCH"
        )
        # 2627: a PRIMARY KEY violation, severity 14, which CATCH handles (11 to 19).
        assert cursor.fetchall() == [(2627, 14, 2627)]
    finally:
        conn.close()


def test_raiserror_formats_its_arguments_in_catch_through_pymssql(server: TdsServer) -> None:
    conn = connect(server)
    try:
        cursor = conn.cursor()
        cursor.execute(
            "BEGIN TRY RAISERROR(N'This is message %s %d.', 16, 4, N'number', 5) END TRY "
            "BEGIN CATCH SELECT ERROR_MESSAGE() AS m, ERROR_STATE() AS s, ERROR_NUMBER() AS n "
            "END CATCH"
        )
        assert cursor.fetchall() == [("This is message number 5.", 4, 50000)]
    finally:
        conn.close()


def test_a_rethrown_error_reaches_pymssql_with_its_own_number(server: TdsServer) -> None:
    conn = connect(server)
    try:
        cursor = conn.cursor()
        with pytest.raises(pymssql.Error) as raised:
            cursor.execute("BEGIN TRY SELECT 1 / 0 END TRY BEGIN CATCH THROW; END CATCH")
        assert raised.value.args[0] == 8134
        with pytest.raises(pymssql.Error) as thrown:
            cursor.execute("THROW 51000, N'The record does not exist.', 1;")
        assert thrown.value.args[0] == 51000
        assert b"The record does not exist." in thrown.value.args[1]
    finally:
        conn.close()


def test_spid_is_the_one_the_login_was_given(server: TdsServer) -> None:
    conn = connect(server)
    other = connect(server)
    try:
        first, second = conn.cursor(), other.cursor()
        first.execute("SELECT @@SPID")
        second.execute("SELECT @@SPID")
        spids = (first.fetchone()[0], second.fetchone()[0])
    finally:
        conn.close()
        other.close()
    assert spids[0] != spids[1]


def test_error_line_names_the_batch_line_of_the_statement_that_failed(server: TdsServer) -> None:
    """ERROR_LINE() returns the line number at which the error occurred, NULL outside CATCH
    (https://learn.microsoft.com/en-us/sql/t-sql/functions/error-line-transact-sql)."""
    batch = (
        "DECLARE @x int = 1\n"
        "\n"
        "BEGIN TRY\n"
        "    -- Generate a divide-by-zero error.\n"
        "    SET @x = 2\n"
        "    SELECT 1/0\n"
        "END TRY\n"
        "BEGIN CATCH\n"
        "    SELECT ERROR_LINE(), ERROR_NUMBER()\n"
        "END CATCH\n"
        "SELECT ERROR_LINE()"
    )
    failing = batch.splitlines().index("    SELECT 1/0") + 1
    conn = connect(server)
    try:
        cursor = conn.cursor()
        cursor.execute(batch)
        caught = cursor.fetchall()
        cursor.nextset()
        outside = cursor.fetchall()
    finally:
        conn.close()
    assert caught == [(failing, 8134)]
    assert outside == [(None,)]
