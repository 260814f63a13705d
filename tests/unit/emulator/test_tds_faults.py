"""The TDS server's wire path under faults, through real drivers: pymssql, python-tds and
mssql-python (Microsoft's ODBC driver).

A test-only fault script (`mssql_cdc.emulator.wire_faults`) makes the server answer SQL Server's
errors, stall, drop a connection mid-result or stream synthesized rows. Each case checks what
the driver raises, and that the library's `error_number` and retry classification read that
real exception as SQL Server's documentation says. Connections stay on 127.0.0.1.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any

import mssql_python
import pymssql
import pytds
import pytest

from mssql_cdc.emulator import Emulator, TdsServer
from mssql_cdc.emulator.serve import serve
from mssql_cdc.emulator.wire_faults import WireFault, wire_faults
from mssql_cdc.sqlserver.tsql import retry
from mssql_cdc.sqlserver.tsql.drivers import error_number
from tests.unit.support.tds_emulator import one_order

DRIVERS = ["pymssql", "python-tds"]
ALL_DRIVERS = [*DRIVERS, "mssql-python"]
DRIVER_ERRORS = (pymssql.Error, pytds.Error, mssql_python.Error)
MAX_LSN = "SELECT sys.fn_cdc_get_max_lsn()"
# Severity as SQL Server sends it, and whether Microsoft documents the error as one to retry
# on a new connection (decision 0740).
SERVER_ERRORS = {
    1205: (13, True),
    1222: (16, False),
    40197: (17, True),
    40501: (20, True),
    40613: (17, True),
    49918: (16, True),
}


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[Emulator]:
    emu = one_order(tmp_path / "shop.db")
    yield emu
    emu.close()


def connect(server: TdsServer, driver: str, timeout: int = 10, login_timeout: int = 10) -> Any:
    if driver == "mssql-python":
        return mssql_python.connect(
            server.connection_string("mssql-python"), autocommit=True, timeout=login_timeout
        )
    if driver == "pymssql":
        return pymssql.connect(
            **server.connect_kwargs("pymssql"),
            login_timeout=login_timeout,
            timeout=timeout,
            tds_version="7.4",
        )
    return pytds.connect(
        **server.connect_kwargs("python-tds"), timeout=timeout, login_timeout=login_timeout
    )


def close(conn: Any) -> None:
    with suppress(mssql_python.OperationalError):  # ODBC's close of a broken link raises
        conn.close()


def scalar(conn: Any, sql: str) -> Any:
    cursor = conn.cursor()
    cursor.execute(sql)
    rows = cursor.fetchall()
    cursor.close()
    return rows[0][0]


_PYMSSQL_CONNECT = """
import json, sys
import pymssql
from mssql_cdc.sqlserver.tsql import retry
from mssql_cdc.sqlserver.tsql.drivers import error_number
try:
    pymssql.connect(server="127.0.0.1", port=sys.argv[1], user="sa", password=sys.argv[2],
                    database="shop", login_timeout=10, tds_version="7.4", autocommit=True)
except pymssql.Error as exc:
    print(json.dumps([error_number(exc), retry.is_transient(exc), str(exc)]))
"""


def refused_connect(server: TdsServer, driver: str) -> tuple[int | None, bool, str]:
    """How the library reads `driver`'s refused connect: error_number, is_transient, text.

    pymssql's runs in a child process: pymssql keeps the most severe server message of any
    failed connect for the life of the process (its clr_err never resets those globals), so
    every later connect error of the test process would carry this one's number.
    """
    if driver == "pymssql":
        child = [sys.executable, "-c", _PYMSSQL_CONNECT, str(server.port), server.password]
        out = subprocess.run(child, capture_output=True, text=True, timeout=60, check=True)
        number, transient, text = json.loads(out.stdout)
        return number, transient, text
    with pytest.raises(DRIVER_ERRORS) as caught:
        connect(server, driver)
    return error_number(caught.value), retry.is_transient(caught.value), str(caught.value)


def settled(server: TdsServer, count: int) -> bool:
    deadline = time.monotonic() + 10
    while server.live_connections() != count and time.monotonic() < deadline:
        time.sleep(0.05)
    return server.live_connections() == count


@pytest.mark.parametrize("driver", ALL_DRIVERS)
@pytest.mark.parametrize("number", sorted(SERVER_ERRORS))
def test_a_server_error_reaches_the_driver_with_its_number_and_retry_class(
    driver: str, number: int, emulator: Emulator
) -> None:
    severity, transient = SERVER_ERRORS[number]
    fault = WireFault("error", match="fn_cdc_get_max_lsn", number=number, times=1)
    with serve(emulator.path, faults=[fault]) as server:
        conn = connect(server, driver)
        try:
            with pytest.raises(DRIVER_ERRORS) as caught:
                scalar(conn, MAX_LSN)
            exc = caught.value
            if driver == "python-tds":
                assert (exc.msg_no, exc.severity) == (number, severity)  # type: ignore[attr-defined]
            else:
                assert retry.is_transient(exc) is transient, repr(exc)
                # ODBC passes on no text of a fatal (severity 20+) error, so no number either.
                fatal_by_odbc = driver == "mssql-python" and severity >= 20
                assert error_number(exc) == (None if fatal_by_odbc else number), repr(exc)
            if severity >= 20:  # SQL Server ends the session after a fatal error
                with pytest.raises(DRIVER_ERRORS):
                    scalar(conn, "SELECT 42")
                assert settled(server, 0)
            else:
                assert scalar(conn, "SELECT 42") == 42
        finally:
            close(conn)


@pytest.mark.parametrize("driver", ALL_DRIVERS)
def test_a_refused_login_is_18456_and_never_retried(driver: str, emulator: Emulator) -> None:
    with serve(
        emulator.path, faults=[{"when": "login", "action": "error", "number": 18456}]
    ) as server:
        if driver == "python-tds":
            with pytest.raises(pytds.OperationalError) as caught:
                connect(server, driver)
            assert str(caught.value.args[0]) == "Login failed for user 'sa'."
        else:
            number, transient, text = refused_connect(server, driver)
            assert (number, transient) == (18456, False), text


@pytest.mark.parametrize("driver", ["pymssql", "mssql-python"])
def test_an_unavailable_database_at_login_is_40613_and_transient(
    driver: str, emulator: Emulator
) -> None:
    fault = WireFault("error", when="login", number=40613, times=1)
    with serve(emulator.path, faults=[fault]) as server:
        number, transient, text = refused_connect(server, driver)
        assert (number, transient) == (40613, True), text
        conn = connect(server, driver)  # the retry's new connection gets in
        assert scalar(conn, "SELECT 42") == 42
        conn.close()


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_connection_dropped_mid_result_fails_the_read_and_pymssql_retries_it(
    driver: str, emulator: Emulator
) -> None:
    faults = [
        WireFault("rows", match="big", rows=100_000),
        WireFault("drop", match="big", after_rows=1000),
    ]
    with serve(emulator.path, faults=faults) as server:
        conn = connect(server, driver)
        cursor = conn.cursor()
        with pytest.raises((pymssql.Error, pytds.Error, OSError)) as caught:
            cursor.execute("SELECT n, text FROM big")
            cursor.fetchall()
        conn.close()
        if driver == "pymssql":
            assert retry.is_transient(caught.value), repr(caught.value)
        assert settled(server, 0)
        fresh = connect(server, driver)
        assert scalar(fresh, "SELECT 42") == 42  # the server goes on
        fresh.close()


def test_mssql_python_ends_a_result_cut_mid_stream_short_and_without_an_exception(
    emulator: Emulator,
) -> None:
    # A hazard the T-SQL backend must guard against: ODBC reports the broken link only in the
    # cursor's messages, and fetchall() returns the rows that arrived as if they were all.
    faults = [
        WireFault("rows", match="big", rows=100_000),
        WireFault("drop", match="big", after_rows=1000),
    ]
    with serve(emulator.path, faults=faults) as server:
        conn = connect(server, "mssql-python")
        cursor = conn.cursor()
        cursor.execute("SELECT n, text FROM big")
        assert len(cursor.fetchall()) == 1000
        assert any("Communication link failure" in text for _, text in cursor.messages)
        with pytest.raises(mssql_python.OperationalError) as caught:
            scalar(conn, "SELECT 42")
        assert retry.is_transient(caught.value)
        close(conn)


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_stall_past_the_clients_timeout_is_cancelled_and_the_connection_goes_on(
    driver: str, emulator: Emulator
) -> None:
    fault = WireFault("stall", match="fn_cdc_get_max_lsn", seconds=60, times=1)
    with serve(emulator.path, faults=[fault]) as server:
        conn = connect(server, driver, timeout=1)
        started = time.monotonic()
        with pytest.raises((pymssql.Error, pytds.Error, TimeoutError)) as caught:
            scalar(conn, MAX_LSN)
        assert time.monotonic() - started < 10
        if driver == "pymssql":
            assert retry.is_transient(caught.value), repr(caught.value)
            assert error_number(caught.value) == 20003, repr(caught.value)
        if driver == "pymssql":
            # FreeTDS gives the connection up after a timeout: closed cleanly, not hung.
            with pytest.raises(pymssql.InterfaceError, match="Not connected"):
                scalar(conn, "SELECT 42")
        else:
            # python-tds cancelled (ATTENTION); the server acknowledged, the connection goes on.
            assert scalar(conn, "SELECT 42") == 42
        conn.close()
        assert settled(server, 0)


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_cancel_during_a_long_result_stops_it_and_the_connection_goes_on(
    driver: str, emulator: Emulator
) -> None:
    with serve(emulator.path, faults=[WireFault("rows", match="big", rows=10_000_000)]) as server:
        conn = connect(server, driver)
        cursor = conn.cursor()
        cursor.execute("SELECT n, text FROM big")
        assert [row[0] for row in cursor.fetchmany(3)] == [1, 2, 3]
        started = time.monotonic()
        # pymssql's cancel is its _mssql connection's (dbcancel); python-tds's is the cursor's.
        (conn._conn if driver == "pymssql" else cursor).cancel()
        assert time.monotonic() - started < 10  # not ten million rows later
        assert scalar(conn, "SELECT 42") == 42
        conn.close()


@pytest.mark.parametrize("driver", DRIVERS)
def test_one_connection_past_the_bound_gets_17809(driver: str, emulator: Emulator) -> None:
    with emulator.serve(max_connections=1) as server:
        first = connect(server, "python-tds")
        if driver == "pymssql":
            number, transient, text = refused_connect(server, driver)
            assert (number, transient) == (17809, False), text
        else:
            # python-tds retries a login error other than 18456 until its login timeout.
            with pytest.raises((pytds.Error, TimeoutError)) as caught:
                connect(server, driver, login_timeout=2)
            cause: BaseException | None = caught.value
            while cause is not None and "user connections" not in str(cause):
                cause = cause.__cause__ or cause.__context__
            assert cause is not None, repr(caught.value)
            text = str(cause)
        assert "the maximum number of '1' user connections has already been reached" in text
        assert server.live_connections() == 1
        first.close()
        assert settled(server, 0)
        again = connect(server, driver)
        assert scalar(again, "SELECT 42") == 42
        again.close()


def test_a_client_that_stops_reading_stalls_only_itself(emulator: Emulator) -> None:
    with serve(emulator.path, faults=[WireFault("rows", match="big", rows=10_000_000)]) as server:
        slow = connect(server, "python-tds")
        slow.cursor().execute("SELECT n, text FROM big")  # reads the first rows, then nothing
        other = connect(server, "pymssql")
        started = time.monotonic()
        assert scalar(other, "SELECT 42") == 42
        assert time.monotonic() - started < 5
        other.close()
        started = time.monotonic()
        server.stop()  # a connection blocked in send() does not hold stop() up
        assert time.monotonic() - started < 10
        slow.close()


def test_idle_connections_do_not_burn_cpu(emulator: Emulator) -> None:
    with emulator.serve() as server:
        conns = [connect(server, "python-tds") for _ in range(8)]
        before = time.process_time()  # every thread of this process, the server's included
        time.sleep(1.0)
        used = time.process_time() - before
        for conn in conns:
            conn.close()
    assert used < 0.2, f"8 idle connections used {used:.2f} s of CPU in 1 s"


_SERVE_IN_CHILD = """
import sys
from mssql_cdc.emulator.serve import serve
from mssql_cdc.emulator.wire_faults import WireFault
server = serve(sys.argv[1], password="x", faults=[WireFault("rows", match="big", rows=1_000_000)])
print(server.port, flush=True)
sys.stdin.read()
server.stop()
"""


def _high_water_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM in /proc status")


def test_a_million_row_result_streams_without_growing_the_server(emulator: Emulator) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", _SERVE_IN_CHILD, str(emulator.path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        conn = pymssql.connect(
            server="127.0.0.1", port=str(port), user="sa", password="x", database="shop",
            login_timeout=10, tds_version="7.4", autocommit=True,
        )  # fmt: skip
        assert scalar(conn, "SELECT 42") == 42
        before = _high_water_kib(proc.pid)
        cursor = conn.cursor()
        cursor.execute("SELECT n, text FROM big")
        count, last = 0, None
        for row in cursor:  # one row at a time: the client holds no result either
            count, last = count + 1, row
        grown = _high_water_kib(proc.pid) - before
        conn.close()
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        proc.wait(timeout=30)
    assert (count, last) == (1_000_000, (1_000_000, "row 1000000"))
    # The whole result is about 32 MB on the wire; the server's peak may grow by a few packets.
    assert grown < 8 * 1024, f"the server's peak RSS grew {grown} KiB while streaming"


def test_a_fault_script_refuses_what_sql_server_would_never_send() -> None:
    with pytest.raises(ValueError, match="12345"):
        WireFault("error", number=12345)
    with pytest.raises(ValueError, match="unknown fields"):
        wire_faults([{"action": "error", "number": 1205, "severity": 13}])
    with pytest.raises(ValueError, match="none of"):
        WireFault("explode")  # type: ignore[arg-type]


def test_faults_fire_in_whichever_connection_meets_them_first(emulator: Emulator) -> None:
    fault = WireFault("error", match="fn_cdc_get_max_lsn", number=1205, times=1)
    with serve(emulator.path, faults=[fault]) as server:
        conns = [connect(server, "python-tds") for _ in range(4)]
        failures: list[int] = []
        lock = threading.Lock()

        def read(conn: Any) -> None:
            try:
                scalar(conn, MAX_LSN)
            except pytds.Error as exc:
                with lock:
                    failures.append(exc.msg_no)  # type: ignore[attr-defined]

        threads = [threading.Thread(target=read, args=(conn,)) for conn in conns]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        for conn in conns:
            conn.close()
    assert failures == [1205]


@pytest.mark.parametrize("backend", ["mssql-python", "pymssql"])
def test_a_change_read_cut_mid_stream_fails_and_never_looks_complete(
    emulator: Emulator, backend: str
) -> None:
    from mssql_cdc.errors import ConnectionLostError
    from mssql_cdc.options.config import SourceConfig
    from mssql_cdc.sqlserver.backend_choice import open_backend
    from mssql_cdc.sqlserver.metadata import ReadColumn

    for i in range(2, 40):
        emulator.commit([("insert", "dbo.orders", {"order_id": i})])
    lo, hi = emulator.min_lsn("dbo_orders"), emulator.max_lsn()
    assert lo is not None
    assert hi is not None
    drop = WireFault("drop", match="__$start_lsn", after_rows=5)
    with serve(emulator.path, faults=[drop]) as server:
        options = {"backend": backend, "connectionString": server.connection_string(backend)}
        source = open_backend(SourceConfig.from_options({**options, "captureInstance": "x"}))
        columns = [ReadColumn("order_id", "INT", "int")]
        read: list[int] = []
        with pytest.raises(Exception) as caught:  # noqa: PT011 - each driver raises its own
            for batch in source.changes.read_changes(
                "dbo_orders",
                lo,
                hi,
                columns=columns,
                include_command_id=True,
                time_zone="UTC",
                batch_rows=1000,
            ):
                read.append(batch.num_rows)
        assert sum(read) < 40
        assert retry.is_transient(caught.value), repr(caught.value)
        if backend == "mssql-python":
            assert isinstance(caught.value, ConnectionLostError)
        with suppress(Exception):
            source.close()
