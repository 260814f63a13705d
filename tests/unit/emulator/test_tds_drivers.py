"""The emulator over TDS, through real SQL Server drivers: pymssql (FreeTDS), python-tds,
mssql-python (Microsoft's ODBC driver 18 by default, its Rust `mssql-odbc` provider on demand)
and Microsoft's JDBC driver (a tiny Java program).

The oracle is the emulator's own Python API on the same file; the drivers only ever see the
wire. Connections stay on 127.0.0.1.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import date, datetime
from datetime import time as time_of_day
from decimal import Decimal
from pathlib import Path
from typing import Any

import mssql_python
import pymssql
import pytds
import pytest

from mssql_cdc.emulator import Emulator, TdsServer
from mssql_cdc.options.connection_string import ConnectionString
from mssql_cdc.spark import delta_jars
from mssql_cdc.sqlserver.tsql import statements
from mssql_cdc.sqlserver.tsql.drivers import Driver, open_session
from mssql_cdc.sqlserver.tsql.statements import Paramstyle
from tests.unit.support.tds_clients import connect

DRIVERS = ["pymssql", "python-tds", "mssql-python"]
PARAMSTYLE: dict[str, Paramstyle] = {
    "pymssql": "pyformat",
    "python-tds": "pyformat",
    "mssql-python": "qmark",
}


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[Emulator]:
    emu = Emulator.create(tmp_path / "shop.db", start="2026-09-28T13:50:00")
    emu.create_table(
        "dbo.orders", {"order_id": "int", "status": "nvarchar(20)"}, primary_key="order_id"
    )
    emu.enable_cdc("dbo.orders")
    emu.commit([("insert", "dbo.orders", {"order_id": 1, "status": "new"})], at="2026-09-28T14:00")
    emu.commit([("update", "dbo.orders", {"order_id": 1, "status": "paid"})], at="2026-09-28T14:01")
    emu.idle(at="2026-09-28T14:05")
    yield emu
    emu.close()


@pytest.fixture
def server(emulator: Emulator) -> Iterator[TdsServer]:
    with emulator.serve() as srv:
        yield srv


def one(conn: Any, sql: str, params: tuple[Any, ...] | None = None) -> Any:
    cursor = conn.cursor()
    if params is None:
        cursor.execute(sql)
    else:
        cursor.execute(sql, params)
    rows = cursor.fetchall()
    assert len(rows) == 1, rows
    return rows[0][0]


def server_error(exc: BaseException) -> tuple[int | None, str]:
    """The SQL Server error number and message a driver's exception carries (ODBC's messages
    carry no number: None)."""
    if isinstance(exc, mssql_python.Error):
        return None, exc.ddbc_error.split("[SQL Server]", 1)[1]
    if isinstance(exc, pymssql.Error):
        number, raw = exc.args[0], exc.args[1]
        return int(number), raw.decode().split("DB-Lib error")[0]
    return int(exc.msg_no), str(exc.text)  # type: ignore[attr-defined]


@pytest.mark.parametrize("driver", DRIVERS)
def test_min_and_max_lsn_over_the_wire_equal_the_emulators(
    driver: str, emulator: Emulator, server: TdsServer
) -> None:
    reader = emulator.reader()
    conn = connect(server, driver)
    try:
        assert one(conn, "SELECT sys.fn_cdc_get_max_lsn()") == bytes.fromhex(
            reader.max_lsn()[2:]  # type: ignore[index]
        )
        assert one(conn, "SELECT sys.fn_cdc_get_min_lsn('dbo_orders')") == bytes.fromhex(
            reader.min_lsn("dbo_orders")[2:]  # type: ignore[index]
        )
        assert one(conn, "SELECT sys.fn_cdc_get_min_lsn('no_such_instance')") == bytes(10)
    finally:
        conn.close()


@pytest.mark.parametrize("driver", DRIVERS)
def test_the_backends_lsn_statements_get_the_emulators_text(
    driver: str, emulator: Emulator, server: TdsServer
) -> None:
    # pymssql inlines the parameter as a literal; python-tds sends it to sp_executesql, ODBC
    # to sp_prepexec as a varchar(n).
    reader = emulator.reader()
    conn = connect(server, driver)
    try:
        for statement, expected in [
            (statements.max_lsn(), reader.max_lsn()),
            (statements.min_lsn("dbo_orders"), reader.min_lsn("dbo_orders")),
        ]:
            text, params = statement.render(PARAMSTYLE[driver])
            assert one(conn, text, params) == expected
    finally:
        conn.close()


@pytest.mark.parametrize("driver", ["pymssql", "mssql-python"])
def test_a_backend_session_reads_the_lsns_through_the_servers_connection_string(
    driver: Driver, emulator: Emulator, server: TdsServer
) -> None:
    connection = ConnectionString.parse(server.connection_string(driver))
    session = open_session(driver, connection, connect_timeout=10)
    try:
        assert session.scalar(statements.max_lsn()) == emulator.reader().max_lsn()
        assert session.scalar(statements.min_lsn("dbo_orders")) == emulator.min_lsn("dbo_orders")
    finally:
        session.close()


@pytest.mark.parametrize("driver", DRIVERS)
def test_parameters_come_back_as_they_were_bound(driver: str, server: TdsServer) -> None:
    # ODBC binds small integers as tinyint/smallint and strings as varchar(n).
    mark = "?" if PARAMSTYLE[driver] == "qmark" else "%s"
    values = (5, 300, 70000, 2**40, "dbo_orders", None)
    conn = connect(server, driver)
    try:
        cursor = conn.cursor()
        cursor.execute("SELECT " + ", ".join(f"{mark} AS c{i}" for i in range(len(values))), values)
        assert tuple(cursor.fetchall()[0]) == values
        assert [column[0] for column in cursor.description] == [f"c{i}" for i in range(6)]
    finally:
        conn.close()


ODBC_VALUES = [
    True,
    1.5,
    Decimal("-12345678901234567890.123456"),
    "é" * 5000,  # past 4000 characters: nvarchar(max), sent in PLP chunks
    b"z" * 9000,  # past 8000 bytes: varbinary(max)
    datetime(2026, 9, 28, 14, 0, 0, 123456),
    date(2026, 9, 28),
    time_of_day(13, 14, 15, 500000),
    uuid.UUID("12345678-1234-5678-1234-567812345678"),
]


@pytest.mark.parametrize("value", ODBC_VALUES, ids=lambda v: type(v).__name__)
def test_odbc_parameters_of_each_type_come_back_as_bound(value: Any, server: TdsServer) -> None:
    conn = connect(server, "mssql-python")
    try:
        cursor = conn.cursor()
        cursor.execute("SELECT ? AS v", (value,))
        assert cursor.fetchall()[0][0] == value
        cursor.execute("SELECT ? AS v", (value,))  # again: ODBC prepares anew, then unprepares
        assert cursor.fetchall()[0][0] == value
    finally:
        conn.close()


_RUST_PROVIDER_PROBE = """
import sys, mssql_python
conn = mssql_python.connect(sys.argv[1], autocommit=True, timeout=10)
cursor = conn.cursor()
cursor.execute("SELECT sys.fn_cdc_get_min_lsn(?) AS m", ("dbo_orders",))
print(mssql_python.get_native_provider_info()["id"], cursor.fetchall()[0][0].hex())
conn.close()
"""


def test_mssql_pythons_rust_provider_reads_the_min_lsn(
    emulator: Emulator, server: TdsServer
) -> None:
    # The provider is chosen once per process, so the Rust one runs in a child process.
    env = {**os.environ, "MSSQL_PYTHON_NATIVE_PROVIDER": "mssql-odbc"}
    done = subprocess.run(
        [sys.executable, "-c", _RUST_PROVIDER_PROBE, server.connection_string("mssql-python")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    provider, hex_lsn = done.stdout.split()
    assert provider == "mssql-odbc"
    assert "0x" + hex_lsn.upper() == emulator.reader().min_lsn("dbo_orders")


@pytest.mark.parametrize("driver", DRIVERS)
@pytest.mark.parametrize(
    ("sql", "number", "message"),
    [
        ("EXEC dbo.sp_nothing", 2812, "Could not find stored procedure 'dbo.sp_nothing'."),
        ("SELECT order_id FROM dbo.no_such_table", 208, "Invalid object name 'dbo.no_such_table'."),
        ("SELEKT 1", 2812, "Could not find stored procedure 'SELEKT'."),
        ("SELECT 1 +", 102, "Incorrect syntax near '+'."),
        (
            "SELECT " + "(" * 100_000 + "1" + ")" * 100_000,
            191,
            "Some part of your SQL statement is nested too deeply. Rewrite the query or break it "
            "up into smaller queries.",
        ),
    ],
    ids=["unknown procedure", "unknown table", "a misspelt keyword is a call", "syntax", "deep"],
)
def test_a_bad_statement_gets_sql_servers_error_and_the_connection_goes_on(
    driver: str, sql: str, number: int, message: str, server: TdsServer
) -> None:
    conn = connect(server, driver)
    try:
        with pytest.raises((pymssql.Error, pytds.Error, mssql_python.Error)) as caught:
            conn.cursor().execute(sql)
        assert server_error(caught.value) == (None if driver == "mssql-python" else number, message)
        assert one(conn, "SELECT 42") == 42
    finally:
        conn.close()


def test_two_connections_at_once_are_served_side_by_side(
    emulator: Emulator, server: TdsServer
) -> None:
    first = connect(server, "pymssql")
    second = connect(server, "python-tds")
    try:
        assert server.live_connections() == 2
        max_lsn = bytes.fromhex(emulator.reader().max_lsn()[2:])  # type: ignore[index]
        for _ in range(3):  # interleaved on two open connections
            assert one(first, "SELECT sys.fn_cdc_get_max_lsn()") == max_lsn
            assert one(second, "SELECT sys.fn_cdc_get_max_lsn()") == max_lsn
        emulator.idle(at="2026-09-28T14:10")
        newer = bytes.fromhex(emulator.reader().max_lsn()[2:])  # type: ignore[index]
        assert newer > max_lsn
        assert one(second, "SELECT sys.fn_cdc_get_max_lsn()") == newer
    finally:
        first.close()
        second.close()
    deadline = time.monotonic() + 10
    while server.live_connections() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.live_connections() == 0


def test_a_login_naming_another_database_is_refused(server: TdsServer) -> None:
    kwargs = {**server.connect_kwargs("python-tds"), "database": "elsewhere"}
    with pytest.raises(pytds.Error) as caught:
        pytds.connect(**kwargs, timeout=10, login_timeout=10)
    # SQL Server sends 4060 (cannot open the database), then 18456; pytds raises the last.
    assert server_error(caught.value) == (18456, "Login failed for user 'sa'.")


def test_a_stopped_server_refuses_connections(emulator: Emulator) -> None:
    server = emulator.serve()
    conn = connect(server, "python-tds")
    server.stop()
    server.stop()  # idempotent
    with pytest.raises(pytds.Error):
        conn.cursor().execute("SELECT 1")
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((server.host, server.port), timeout=5)


def test_the_cli_serves_until_terminated(emulator: Emulator) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "mssql_cdc.cli", "emulator", "serve", str(emulator.path)],
        stdout=subprocess.PIPE,
        text=True,
        env=os.environ | {"MSSQL_CDC_EMULATOR_PASSWORD": "x"},
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # "serving PATH as database 'shop' on 127.0.0.1:PORT"
        port = int(first.rsplit(":", 1)[1])
        conn = pytds.connect(
            dsn="127.0.0.1", port=port, user="sa", password="x", database="shop", autocommit=True
        )
        assert one(conn, "SELECT sys.fn_cdc_get_max_lsn()") == bytes.fromhex(
            emulator.reader().max_lsn()[2:]  # type: ignore[index]
        )
        conn.close()
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0


_PROGRAM = """
import java.sql.*;

public class ReadLsns {
  static String hex(byte[] bytes) {
    StringBuilder out = new StringBuilder("0x");
    for (byte b : bytes) out.append(String.format("%02X", b));
    return out.toString();
  }

  public static void main(String[] args) throws Exception {
    try (Connection conn = DriverManager.getConnection(args[0]);
         Statement plain = conn.createStatement();
         PreparedStatement bound = conn.prepareStatement("SELECT sys.fn_cdc_get_min_lsn(?)")) {
      try (ResultSet rows = plain.executeQuery("SELECT sys.fn_cdc_get_max_lsn()")) {
        rows.next();
        System.out.println(hex(rows.getBytes(1)));
      }
      bound.setString(1, "dbo_orders");
      try (ResultSet rows = bound.executeQuery()) {
        rows.next();
        System.out.println(hex(rows.getBytes(1)));
      }
    }
  }
}
"""


def test_microsofts_jdbc_driver_reads_the_emulators_lsns(
    emulator: Emulator, server: TdsServer, tmp_path: Path
) -> None:
    # The jar comes from `.cache/jars` (make setup); the program is compiled here with javac.
    [jar] = [j for j in delta_jars() if j.name.startswith("mssql-jdbc-")]
    source = tmp_path / "ReadLsns.java"
    source.write_text(_PROGRAM)
    subprocess.run(["javac", "-d", str(tmp_path), str(source)], check=True, timeout=120)
    done = subprocess.run(
        ["java", "-cp", f"{jar}:{tmp_path}", "ReadLsns", server.connection_string("jdbc")],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert done.stdout.split() == [
        emulator.reader().max_lsn(),
        emulator.reader().min_lsn("dbo_orders"),
    ]
