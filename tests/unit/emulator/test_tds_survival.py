"""The served emulator survives its clients, through real drivers: a cancelled or abandoned
query stops, `stop()` and SIGTERM return while a query computes, a memory-hungry statement
fails with error 701, overflow is 8115, and `serve` refuses what it must not touch."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import mssql_python
import pymssql
import pytds
import pytest

from mssql_cdc.emulator import Emulator, TdsServer
from mssql_cdc.emulator.serve import serve
from mssql_cdc.errors import FileFormatError
from mssql_cdc.sqlserver.tsql.drivers import error_number
from tests.unit.support.tds_emulator import one_order

DRIVERS = ["pymssql", "mssql-python"]
NINES = "9" * 38


def cross_join(k: int, select: str = "COUNT_BIG(*)", tail: str = "") -> str:
    """sys.objects joined with itself k times: minutes of work at k = 9 before the fix."""
    joins = " ".join(f"JOIN sys.objects a{i} ON 1 = 1" for i in range(1, k))
    return f"SELECT {select} FROM sys.objects a0 {joins}{tail}"


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[Emulator]:
    emu = one_order(tmp_path / "shop.db")
    yield emu
    emu.close()


def connect(server: TdsServer, driver: str, timeout: int = 30) -> Any:
    if driver == "mssql-python":
        return mssql_python.connect(
            server.connection_string("mssql-python"), autocommit=True, timeout=10
        )
    if driver == "python-tds":
        kwargs = server.connect_kwargs("python-tds")
        return pytds.connect(**kwargs, timeout=timeout, login_timeout=10)
    return pymssql.connect(
        **server.connect_kwargs("pymssql"), login_timeout=10, timeout=timeout, tds_version="7.4"
    )


def scalar(conn: Any, sql: str) -> Any:
    cursor = conn.cursor()
    cursor.execute(sql)
    rows = cursor.fetchall()
    cursor.close()
    return rows[0][0]


def settled(server: TdsServer, count: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while server.live_connections() != count and time.monotonic() < deadline:
        time.sleep(0.02)
    return server.live_connections() == count


def test_a_query_timeout_cancels_a_computing_cross_join_and_the_connection_goes_on(
    emulator: Emulator,
) -> None:
    """python-tds sends ATTENTION at its timeout and waits for the DONE(ATTN) acknowledgment
    (https://learn.microsoft.com/en-us/openspecs/windows_protocols/ms-tds/9bcc4b79-a791-41d0-bf76-73a97e501b35)."""
    with serve(emulator.path) as server:
        conn = connect(server, "python-tds", timeout=1)
        started = time.monotonic()
        with pytest.raises((pytds.Error, TimeoutError)):
            scalar(conn, cross_join(9))
        assert time.monotonic() - started < 4  # the timeout, then an answer within a second
        assert scalar(conn, "SELECT 42") == 42
        conn.close()


def test_a_client_that_leaves_mid_query_frees_its_connection_within_a_second(
    emulator: Emulator,
) -> None:
    with serve(emulator.path) as server:
        program = (
            "import sys, pymssql\n"
            "conn = pymssql.connect(server='127.0.0.1', port=sys.argv[1], user='sa',"
            " password=sys.argv[2], database='shop', autocommit=True, tds_version='7.4')\n"
            "print('connected', flush=True)\n"
            f"conn.cursor().execute({cross_join(9)!r})\n"
        )
        child = subprocess.Popen(
            [sys.executable, "-c", program, str(server.port), server.password],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert child.stdout is not None
            assert child.stdout.readline().strip() == "connected"
            time.sleep(0.3)  # the query is computing
            assert server.live_connections() == 1
        finally:
            child.kill()
            child.wait(timeout=30)
        assert settled(server, 0, 1.5)


def test_stop_returns_within_seconds_while_a_query_computes(emulator: Emulator) -> None:
    server = serve(emulator.path)
    conn = connect(server, "pymssql")
    failed: list[BaseException] = []

    def run() -> None:
        try:
            scalar(conn, cross_join(9))
        except pymssql.Error as exc:
            failed.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    time.sleep(0.3)
    started = time.monotonic()
    server.stop()
    assert time.monotonic() - started < 3
    worker.join(timeout=10)
    assert not worker.is_alive()
    assert failed  # the driver saw its query end without a result
    conn.close()


def test_sigterm_ends_serve_within_seconds_while_a_query_computes(emulator: Emulator) -> None:
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
        conn = pymssql.connect(
            server="127.0.0.1", port=port, user="sa", password="x", database="shop",
            autocommit=True, tds_version="7.4", login_timeout=10,
        )  # fmt: skip

        def run() -> None:
            with pytest.raises(pymssql.Error):
                scalar(conn, cross_join(9))

        worker = threading.Thread(target=run, daemon=True)
        worker.start()
        time.sleep(0.3)
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        assert time.monotonic() - started < 5
        worker.join(timeout=10)
        conn.close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_value_past_numerics_38_digits_is_8115(driver: str, emulator: Emulator) -> None:
    """decimal holds at most 38 digits; past them SQL Server raises 8115
    (https://learn.microsoft.com/en-us/sql/t-sql/data-types/decimal-and-numeric-transact-sql,
    https://learn.microsoft.com/en-us/sql/relational-databases/errors-events/mssqlserver-8115-database-engine-error)."""
    with serve(emulator.path) as server:
        conn = connect(server, driver)
        # 1e19 has 20 digits: it fits decimal(38,0) exactly.
        assert scalar(conn, "SELECT CAST(1e19 AS decimal(38,0))") == Decimal(10**19)
        for sql in [
            "SELECT CAST(1e40 AS decimal(38,0))",
            f"SELECT CAST('{NINES}' AS decimal(38,0)) + 1",
            f"SELECT SUM(x) FROM (SELECT CAST('{NINES}' AS decimal(38,0)) AS x"
            f" UNION ALL SELECT CAST('{NINES}' AS decimal(38,0))) AS d",
        ]:
            with pytest.raises((pymssql.Error, mssql_python.Error)) as caught:
                scalar(conn, sql)
            assert "Arithmetic overflow" in str(caught.value), sql
            if driver == "pymssql":
                assert error_number(caught.value) == 8115, sql
        assert scalar(conn, "SELECT 42") == 42
        conn.close()


def test_a_sort_past_the_memory_bound_fails_with_701_and_the_connection_goes_on(
    emulator: Emulator,
) -> None:
    """MSSQLSERVER_701's text, severity 17
    (https://learn.microsoft.com/en-us/sql/relational-databases/errors-events/mssqlserver-701-database-engine-error)."""
    with serve(emulator.path) as server:
        conn = connect(server, "pymssql", timeout=120)
        with pytest.raises(pymssql.Error) as caught:
            scalar(conn, cross_join(9, "a0.name, a1.name, a2.name", " ORDER BY a3.name, a4.name"))
        assert error_number(caught.value) == 701
        assert "insufficient system memory in resource pool 'default'" in str(caught.value)
        assert scalar(conn, "SELECT 42") == 42
        conn.close()


def test_serving_a_file_that_is_no_emulator_database_is_refused_naming_it(tmp_path: Path) -> None:
    notes = tmp_path / "notes.db"
    notes.write_text("not a database\n")
    with pytest.raises(FileFormatError, match=r"notes\.db"):
        serve(notes)
    done = subprocess.run(
        [sys.executable, "-m", "mssql_cdc.cli", "emulator", "serve", str(notes)],
        capture_output=True, text=True, timeout=60, check=False,
        env=os.environ | {"MSSQL_CDC_EMULATOR_PASSWORD": "x"},
    )  # fmt: skip
    assert done.returncode != 0
    assert "notes.db" in done.stderr
    assert "serving" not in done.stdout


def test_the_cli_never_overwrites_an_existing_certificate_file(
    emulator: Emulator, tmp_path: Path
) -> None:
    certificate = tmp_path / "cert.pem"
    certificate.write_text("mine\n")
    done = subprocess.run(
        [sys.executable, "-m", "mssql_cdc.cli", "emulator", "serve", str(emulator.path),
         "--tls", "--certificate", str(certificate)],
        capture_output=True, text=True, timeout=60, check=False,
        env=os.environ | {"MSSQL_CDC_EMULATOR_PASSWORD": "x"},
    )  # fmt: skip
    assert done.returncode == 2
    assert "already exists" in done.stderr
    assert str(certificate) in done.stderr
    assert certificate.read_text() == "mine\n"
