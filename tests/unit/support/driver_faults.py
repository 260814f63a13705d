"""Loopback endpoints that make the real SQL Server drivers fail the way a network or a server does.

No SQL Server is needed: a closed port refuses, a listener that never answers times out, one
that closes every connection at once breaks the handshake, and `FakeServer` speaks just enough
TDS (a PRELOGIN answer without encryption, then ERROR and DONE tokens) to hand the driver a
server error number of our choosing. mssql-python's ODBC driver wants more than this fake's
login acknowledgement, so only its login errors can be captured; pymssql's query errors too.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Literal

__all__ = ["QUERY_MARK", "FakeServer", "closed_port", "closing_listener", "silent_listener"]

_LOOPBACK = "127.0.0.1"
_PRELOGIN, _LOGIN7, _REPLY = 0x12, 0x10, 0x04
_END_OF_MESSAGE = 0x01
QUERY_MARK = "SELECT 1 AS fail_here"  # the one statement FakeServer(at="query") fails


def closed_port() -> int:
    """A loopback port nobody listens on (bound once, then released)."""
    with socket.socket() as probe:
        probe.bind((_LOOPBACK, 0))
        port: int = probe.getsockname()[1]
    return port


def unreachable_options(folder: Path, backend: str, capture_instance: str) -> tuple[Path, int]:
    """An --options file whose server is a closed loopback port, with a password in its
    connection string, and that port: for errors that must name the server, never the password."""
    port = closed_port()
    options = folder / "options.json"
    options.write_text(
        json.dumps(
            {
                "backend": backend,
                "captureInstance": capture_instance,
                "connectTimeout": "1",
                "connectionString": f"Server=127.0.0.1,{port};UID=etl;PWD=S3cret!pw;Encrypt=no",
            }
        )
    )
    return options, port


def _listener() -> socket.socket:
    server = socket.socket()
    server.bind((_LOOPBACK, 0))
    server.listen(8)
    return server


@contextmanager
def silent_listener() -> Iterator[int]:
    """A port whose connections the kernel accepts and nobody ever answers."""
    with _listener() as server:
        yield server.getsockname()[1]


def _serve(server: socket.socket, handle: Callable[[socket.socket], None]) -> None:
    def loop() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:  # the listener was closed: the test is over
                return
            with conn, suppress(OSError):  # OSError: the driver gave up first
                handle(conn)

    threading.Thread(target=loop, daemon=True).start()


@contextmanager
def closing_listener() -> Iterator[int]:
    """A port that accepts each connection and closes it before a byte is exchanged."""
    with _listener() as server:
        _serve(server, lambda conn: None)
        yield server.getsockname()[1]


def _read_packet(conn: socket.socket) -> tuple[int, bytes]:
    """One whole TDS message: (packet type, payload of all its packets)."""
    payload = b""
    while True:
        header = _read_exactly(conn, 8)
        kind, status, length = header[0], header[1], struct.unpack(">H", header[2:4])[0]
        payload += _read_exactly(conn, length - 8)
        if status & _END_OF_MESSAGE:
            return kind, payload


def _read_exactly(conn: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise ConnectionResetError("the driver closed the connection")
        data += chunk
    return data


def _send(conn: socket.socket, payload: bytes) -> None:
    header = struct.pack(">BBHHBB", _REPLY, _END_OF_MESSAGE, len(payload) + 8, 0, 1, 0)
    conn.sendall(header + payload)


def _prelogin_answer() -> bytes:
    version = struct.pack(">IH", 0x10000FA0, 0)  # reports SQL Server 16.0
    encryption = bytes([2])  # ENCRYPT_NOT_SUP: the login stays in clear text
    options_length = 2 * 5 + 1
    options = struct.pack(">BHH", 0x00, options_length, len(version))
    options += struct.pack(">BHH", 0x01, options_length + len(version), len(encryption))
    return options + b"\xff" + version + encryption


def _utf16(text: str, width: str) -> bytes:
    return struct.pack("<" + width, len(text)) + text.encode("utf-16-le")


def _error_answer(number: int, message: str, tds_version: int) -> bytes:
    # TDS 7.2 widened the line number to 4 bytes and the DONE row count to 8.
    modern = tds_version >= 0x72000000
    body = struct.pack("<iBB", number, 1, 14)
    body += _utf16(message, "H") + _utf16("fake", "B") + _utf16("", "B")
    body += struct.pack("<i" if modern else "<H", 1)
    error = struct.pack("<BH", 0xAA, len(body)) + body
    done = struct.pack("<BHH", 0xFD, 0x0002, 0) + struct.pack("<Q" if modern else "<I", 0)
    return error + done


def _login_ack(tds_version: int) -> bytes:
    program = _utf16("fake", "B")
    body = struct.pack(">BI", 1, tds_version) + program + bytes([16, 0, 0x0F, 0xA0])
    ack = struct.pack("<BH", 0xAD, len(body)) + body
    for kind, new, old in (
        (1, _utf16("master", "B"), _utf16("master", "B")),
        (4, _utf16("4096", "B"), _utf16("4096", "B")),
        (7, bytes([5, 0x09, 0x04, 0xD0, 0x00, 0x34]), bytes([0])),
    ):
        change = bytes([kind]) + new + old
        ack += struct.pack("<BH", 0xE3, len(change)) + change
    return ack + _done(tds_version)


def _done(tds_version: int) -> bytes:
    modern = tds_version >= 0x72000000
    return struct.pack("<BHH", 0xFD, 0, 0) + struct.pack("<Q" if modern else "<I", 0)


class FakeServer:
    """A loopback TDS endpoint that fails with one server error, at login or at every query.

    `at="login"` answers each login with the error; `at="query"` accepts any login and answers
    the statement `QUERY_MARK` with it. Use as a context manager; `port` is where to connect.
    """

    def __init__(self, number: int, message: str, *, at: Literal["login", "query"]) -> None:
        self.number, self.message, self.at = number, message, at
        self._server = _listener()
        self.port: int = self._server.getsockname()[1]

    def _handle(self, conn: socket.socket) -> None:
        conn.settimeout(10)
        kind, _ = _read_packet(conn)
        if kind != _PRELOGIN:
            return
        _send(conn, _prelogin_answer())
        kind, login = _read_packet(conn)
        if kind != _LOGIN7:
            return
        tds_version = struct.unpack("<I", login[4:8])[0]  # 7.4 arrives as 0x74000004
        if self.at == "login":
            _send(conn, _error_answer(self.number, self.message, tds_version))
            return
        _send(conn, _login_ack(tds_version))
        while True:
            _, statement = _read_packet(conn)
            if QUERY_MARK.encode("utf-16-le") in statement:
                _send(conn, _error_answer(self.number, self.message, tds_version))
            else:  # the driver's own session setup succeeds
                _send(conn, _done(tds_version))

    def __enter__(self) -> FakeServer:
        _serve(self._server, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.close()
