"""`serve(log_statements=...)` and `emulator serve --log-statements`: what clients send.

Each login, batch, RPC (with its parameters) and error returned is one line with the
connection's spid; passwords never appear: not LOGIN7's, not a `CREATE LOGIN ... PASSWORD =
'...'` literal (https://learn.microsoft.com/en-us/sql/t-sql/statements/create-login-transact-sql),
not a parameter named like a password. Which statements and errors the lines must show is
known from what the test sent and from Microsoft's error for an unknown object (208, "Invalid
object name", https://learn.microsoft.com/en-us/sql/relational-databases/errors-events/database-engine-events-and-errors).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import mssql_python
import pymssql
import pytest

from mssql_cdc.emulator import Emulator, serve

SERVER_PASSWORD = "Srv-pw-7731!"
LOGIN_SECRET = "Very$ecret-4410"


@pytest.fixture
def emulator_file(tmp_path: Path) -> Path:
    path = tmp_path / "shop.db"
    emu = Emulator.create(path, start="2026-09-28T13:50:00")
    emu.create_table(
        "dbo.orders", {"order_id": "int", "status": "nvarchar(20)"}, primary_key="order_id"
    )
    emu.commit([("insert", "dbo.orders", {"order_id": 1, "status": "new"})])
    emu.close()
    return path


def test_the_log_holds_batches_rpcs_and_errors_and_no_password(
    emulator_file: Path, tmp_path: Path
) -> None:
    log = tmp_path / "statements.log"
    with (
        Emulator.open(emulator_file) as emu,
        emu.serve(password=SERVER_PASSWORD, log_statements=log) as server,
    ):
        conn: Any = pymssql.connect(**server.connect_kwargs("pymssql"), login_timeout=10)
        try:
            cursor = conn.cursor()
            cursor.execute("SELECT status FROM dbo.orders WHERE order_id = 1")
            assert cursor.fetchall() == [("new",)]
            cursor.execute(f"CREATE LOGIN reporter WITH PASSWORD = '{LOGIN_SECRET}'")
            with pytest.raises(pymssql.Error):
                cursor.execute("SELECT * FROM dbo.no_such_table")
        finally:
            conn.close()
        odbc = mssql_python.connect(server.connection_string("mssql-python"), timeout=10)
        try:
            cursor = odbc.cursor()
            cursor.execute("SELECT status FROM dbo.orders WHERE order_id = ?", 1)
            assert [tuple(r) for r in cursor.fetchall()] == [("new",)]
        finally:
            odbc.close()
    text = log.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert SERVER_PASSWORD not in text
    assert LOGIN_SECRET not in text
    assert any("login: user sa" in line for line in lines)
    assert any("batch: SELECT status FROM dbo.orders WHERE order_id = 1" in line for line in lines)
    assert any("CREATE LOGIN reporter WITH PASSWORD = '******'" in line for line in lines)
    assert any("error 208" in line and "Invalid object name" in line for line in lines)
    # The ODBC driver sends its parameterized statement as an RPC; its parameter is logged.
    rpc = [line for line in lines if " rpc: " in line and "order_id = @P1" in line]
    assert rpc
    assert "=1" in rpc[0]
    assert all(" spid " in line for line in lines)


def test_serve_log_statements_writes_to_stderr_from_the_command_line(
    emulator_file: Path,
) -> None:
    env = dict(os.environ, MSSQL_CDC_EMULATOR_PASSWORD=SERVER_PASSWORD)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mssql_cdc.cli",
            "emulator",
            "serve",
            str(emulator_file),
            "--log-statements",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # "serving PATH as database 'shop' on 127.0.0.1:PORT"
        port = int(first.rsplit(":", 1)[1])
        conn: Any = pymssql.connect(
            server="127.0.0.1",
            port=str(port),
            user="sa",
            password=SERVER_PASSWORD,
            database="shop",
            autocommit=True,
            login_timeout=10,
        )
        try:
            cursor = conn.cursor()
            cursor.execute("SELECT N'logged-from-cli' AS x")
            cursor.fetchall()
        finally:
            conn.close()
        time.sleep(0.2)
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert "batch: SELECT N'logged-from-cli' AS x" in err
    assert SERVER_PASSWORD not in err


def test_a_log_file_that_cannot_be_opened_fails_serve_naming_it(
    emulator_file: Path, tmp_path: Path
) -> None:
    missing = tmp_path / "no-such-folder" / "statements.log"
    with pytest.raises(OSError, match="statement log") as raised:
        serve(emulator_file, log_statements=missing)
    assert str(missing) in str(raised.value)


def test_a_binary_rpc_parameter_is_logged_as_a_hex_literal_on_its_own_line(
    emulator_file: Path, tmp_path: Path
) -> None:
    # A binary value is written as SQL Server writes a binary constant, 0x then hex digits
    # (https://learn.microsoft.com/en-us/sql/t-sql/data-types/constants-transact-sql), so its
    # bytes (a NUL, a line end) never cut or run on the log's lines.
    log = tmp_path / "statements.log"
    value = b"\x00\x00\x00\x27\n\x00\x00\x21\x00\x03"
    with Emulator.open(emulator_file) as emu, emu.serve(log_statements=log) as server:
        odbc = mssql_python.connect(server.connection_string("mssql-python"), timeout=10)
        try:
            cursor = odbc.cursor()
            cursor.execute("SELECT sys.fn_cdc_increment_lsn(?)", value)
            cursor.fetchall()
            cursor.execute("SELECT 1")
            cursor.fetchall()
        finally:
            odbc.close()
    lines = log.read_text(encoding="utf-8").splitlines()
    [rpc] = [line for line in lines if " rpc: " in line and "fn_cdc_increment_lsn" in line]
    assert rpc.endswith("=0x" + value.hex().upper())
    assert any(line.endswith("SELECT 1") for line in lines)  # the next entry has its own line
