"""TLS inside TDS, through real drivers: pymssql (FreeTDS), python-tds (pyOpenSSL) and
mssql-python (Microsoft's ODBC 18 driver).

The oracle is the emulator's own Python API on the same file. A relay between driver and
server keeps every byte on the wire, so a test sees what an eavesdropper would: the password
and the statements in clear, or not. Connections stay on 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import mssql_python
import pymssql
import pytds
import pytest

from mssql_cdc.emulator import Emulator, TdsServer
from mssql_cdc.options.connection_string import ConnectionString
from mssql_cdc.sqlserver.tsql import statements
from mssql_cdc.sqlserver.tsql.drivers import open_session
from tests.unit.support.tds_emulator import one_order

PASSWORD = "Tls-Pa55word!"  # the servers' login password; easy to look for on the wire
QUERY = "SELECT sys.fn_cdc_get_max_lsn()"


class Relay:
    """A TCP relay on 127.0.0.1 to one server port that keeps every byte it forwards."""

    def __init__(self, port: int) -> None:
        self._target = port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._seen = bytearray()
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    def seen(self) -> bytes:
        with self._lock:
            return bytes(self._seen)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            server = socket.create_connection(("127.0.0.1", self._target))
            for src, dst in ((client, server), (server, client)):
                pump = threading.Thread(target=self._pump, args=(src, dst), daemon=True)
                pump.start()
                self._threads.append(pump)

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                with self._lock:
                    self._seen += data
                dst.sendall(data)
        except OSError:
            pass  # the other direction closed both sockets
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):  # already shut by the other direction
                    s.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self._listener.close()


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[Emulator]:
    emu = one_order(tmp_path / "shop.db")
    yield emu
    emu.close()


@pytest.fixture
def tls_server(emulator: Emulator) -> Iterator[TdsServer]:
    with emulator.serve(tls=True, password=PASSWORD) as srv:
        yield srv


@pytest.fixture
def relay(tls_server: TdsServer) -> Iterator[Relay]:
    r = Relay(tls_server.port)
    yield r
    r.close()


def max_lsn(emulator: Emulator) -> bytes:
    lsn = emulator.reader().max_lsn()
    assert lsn is not None
    return bytes.fromhex(lsn[2:])


def one(conn: Any, sql: str) -> Any:
    cursor = conn.cursor()
    cursor.execute(sql)
    rows = cursor.fetchall()
    assert len(rows) == 1, rows
    return rows[0][0]


def odbc(port: int, encrypt: str) -> str:
    return (
        f"Server=tcp:127.0.0.1,{port};Database=shop;UID=sa;PWD={PASSWORD};"
        f"Encrypt={encrypt};TrustServerCertificate=yes"
    )


def utf16(text: str) -> bytes:
    return text.encode("utf-16-le")  # how LOGIN7 and SQL batches carry text


# Each opens a connection to 127.0.0.1:port asking for encryption of everything.
Connect = Callable[[int, Path], Any]
FULL: dict[str, Connect] = {
    "pymssql": lambda port, _: pymssql.connect(
        server="127.0.0.1", port=str(port), user="sa", password=PASSWORD, database="shop",
        encryption="require", login_timeout=10, timeout=10, autocommit=True,
    ),
    "python-tds": lambda port, cafile: pytds.connect(
        dsn="127.0.0.1", port=port, user="sa", password=PASSWORD, database="shop",
        cafile=str(cafile), validate_host=False, login_timeout=10, timeout=10, autocommit=True,
    ),
    "mssql-python": lambda port, _: mssql_python.connect(
        odbc(port, "yes"), autocommit=True, timeout=10
    ),
}  # fmt: skip


@pytest.fixture
def cafile(tls_server: TdsServer, tmp_path: Path) -> Path:
    """The server's certificate, for python-tds, which encrypts only with a cafile."""
    assert tls_server.certificate_pem is not None
    path = tmp_path / "server.pem"
    path.write_text(tls_server.certificate_pem)
    return path


def queried_through(relay: Relay, connect: Connect, cafile: Path, emulator: Emulator) -> bytes:
    """Connect through the relay, check two queries against the emulator, return the wire."""
    conn = connect(relay.port, cafile)
    try:
        assert one(conn, "SELECT 1") == 1
        assert one(conn, QUERY) == max_lsn(emulator)
    finally:
        conn.close()
    return relay.seen()


@pytest.mark.parametrize("driver", list(FULL))
def test_a_driver_that_requires_encryption_runs_its_queries_inside_tls(
    driver: str, emulator: Emulator, relay: Relay, cafile: Path
) -> None:
    wire = queried_through(relay, FULL[driver], cafile, emulator)
    assert len(wire) > 1000  # the handshake and the results went through the relay
    assert utf16(PASSWORD) not in wire
    assert utf16(QUERY) not in wire  # the batch travelled encrypted


LOGIN_ONLY: dict[str, Connect] = {
    # FreeTDS's default asks for encryption if the server offers it: ENCRYPT_OFF, the login only.
    "pymssql": lambda port, _: pymssql.connect(
        server="127.0.0.1", port=str(port), user="sa", password=PASSWORD, database="shop",
        login_timeout=10, timeout=10, autocommit=True,
    ),
    "python-tds": lambda port, cafile: pytds.connect(
        dsn="127.0.0.1", port=port, user="sa", password=PASSWORD, database="shop",
        cafile=str(cafile), validate_host=False, enc_login_only=True, login_timeout=10,
        timeout=10, autocommit=True,
    ),
}  # fmt: skip


@pytest.mark.parametrize("driver", list(LOGIN_ONLY))
def test_login_only_encryption_hides_the_password_and_leaves_the_queries_plain(
    driver: str, emulator: Emulator, relay: Relay, cafile: Path
) -> None:
    wire = queried_through(relay, LOGIN_ONLY[driver], cafile, emulator)
    assert utf16(PASSWORD) not in wire
    assert utf16(QUERY) in wire  # MS-TDS 2.2.6.5: after LOGIN7, TLS stops


@pytest.mark.parametrize(
    ("driver", "refusal"),
    [
        ("pymssql", "TDS server connection failed"),  # FreeTDS names no reason
        ("python-tds", "You requested encryption but it is not supported by server"),
        ("mssql-python", "Encryption not supported on SQL Server."),
    ],
)
def test_a_client_that_requires_encryption_is_refused_by_a_server_without_tls(
    driver: str, refusal: str, emulator: Emulator, tmp_path: Path
) -> None:
    cafile = tmp_path / "server.pem"
    with emulator.serve(
        tls=True, password=PASSWORD
    ) as other:  # python-tds reads a cafile before it connects
        cafile.write_text(other.certificate_pem or "")
    with emulator.serve(password=PASSWORD) as plain:
        assert plain.certificate_pem is None
        with pytest.raises((pymssql.Error, pytds.Error, mssql_python.Error)) as caught:
            FULL[driver](plain.port, cafile).close()
        # The server answered PRELOGIN "encryption not supported"; each driver gives up.
        assert refusal in str(caught.value)
        conn = mssql_python.connect(odbc(plain.port, "no"), autocommit=True, timeout=10)
        try:
            assert one(conn, "SELECT 1") == 1  # and serves the next client
        finally:
            conn.close()


def test_the_handles_connection_arguments_ask_for_encryption_and_the_backend_reads_through_them(
    emulator: Emulator, tls_server: TdsServer
) -> None:
    for driver in ("mssql-python", "pymssql", "python-tds"):
        assert "Encrypt=yes;TrustServerCertificate=yes" in tls_server.connection_string(driver)
    assert tls_server.connect_kwargs("pymssql")["encryption"] == "require"
    conn = pymssql.connect(**tls_server.connect_kwargs("pymssql"), login_timeout=10)
    try:
        assert one(conn, QUERY) == max_lsn(emulator)
    finally:
        conn.close()
    connection = ConnectionString.parse(tls_server.connection_string("mssql-python"))
    session = open_session("mssql-python", connection, connect_timeout=10)
    try:
        assert session.scalar(statements.max_lsn()) == emulator.reader().max_lsn()
    finally:
        session.close()


def test_the_cli_serves_tls_and_never_logs_the_password(emulator: Emulator, tmp_path: Path) -> None:
    certificate = tmp_path / "cert.pem"
    proc = subprocess.Popen(
        [sys.executable, "-m", "mssql_cdc.cli", "emulator", "serve", str(emulator.path),
         "--tls", "--certificate", str(certificate)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ | {"MSSQL_CDC_EMULATOR_PASSWORD": PASSWORD},
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # "serving PATH as database 'shop' on HOST:PORT with TLS"
        assert first.rstrip().endswith("with TLS"), first
        port = int(first.rsplit(":", 1)[1].split()[0])
        assert certificate.read_text().startswith("-----BEGIN CERTIFICATE-----")
        conn = mssql_python.connect(odbc(port, "yes"), autocommit=True, timeout=10)
        try:
            assert one(conn, QUERY) == max_lsn(emulator)
        finally:
            conn.close()
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert PASSWORD not in first + out + err


def test_the_cli_refuses_a_certificate_path_without_tls(emulator: Emulator, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mssql_cdc.cli", "emulator", "serve", str(emulator.path),
         "--certificate", str(tmp_path / "cert.pem")],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert "--certificate needs --tls" in done.stderr
    assert not (tmp_path / "cert.pem").exists()
