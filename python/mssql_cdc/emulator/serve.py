"""The emulator over the network: a TDS server that SQL Server drivers connect to.

`Emulator.serve()` and `mssql-cdc emulator serve` start one. The protocol and the statements it
answers live in C++ (`cpp/tds`, decision 0700); this module holds the handle a caller gets.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from mssql_cdc import _native
from mssql_cdc.core import EndsWithBlock
from mssql_cdc.emulator.wire_faults import WireFault, wire_faults

__all__ = ["DEFAULT_MAX_CONNECTIONS", "ClientDriver", "TdsServer", "serve"]

ClientDriver = Literal["mssql-python", "pymssql", "python-tds", "jdbc"]

DEFAULT_MAX_CONNECTIONS = 64
"""Live connections one server accepts; one past it gets error 17809 at login and is closed."""

# The server accepts any login: these are what the handle's connection strings carry.
_USER = "sa"
_PASSWORD = "emulator"


class TdsServer(EndsWithBlock):
    """A running TDS front end over one emulator file, until `stop()` (or the `with` block ends).

    Attributes:
        host: the address it listens on.
        port: the TCP port, chosen by the system when `serve` was given port 0.
        database: the database name clients see and may name in a login or `USE`.
        tls: whether it offers TLS (`serve(tls=True)`).
        certificate_pem: with TLS, its self-signed certificate as PEM (public; the key never
            leaves the server), for a client that verifies it; None without TLS.
    """

    def __init__(self, server: Any) -> None:
        """Use `serve()` or `Emulator.serve()`."""
        self._server: Any = server
        self.host: str = server.host
        self.port: int = server.port
        self.database: str = server.database
        pem: str = server.certificate_pem
        self.certificate_pem: str | None = pem or None
        self.tls: bool = self.certificate_pem is not None

    def connection_string(self, driver: ClientDriver) -> str:
        """A ready connection string for `driver`.

        `mssql-python` and `pymssql` get the ODBC-style form the library's `connectionString`
        option takes (`Server=host,port;Database=...;UID=...;PWD=...`). With TLS every form
        asks for encryption and trusts the self-signed certificate; without, mssql-python's
        says `Encrypt=no` (ODBC 18 encrypts by default). `python-tds` gets pymssql's form;
        `jdbc` gets Microsoft's JDBC URL.
        """
        if driver == "jdbc":
            return (
                f"jdbc:sqlserver://{self.host}:{self.port};databaseName={self.database};"
                f"user={_USER};password={_PASSWORD};encrypt={str(self.tls).lower()};"
                "trustServerCertificate=true"
            )
        odbc = (
            f"Server={self.host},{self.port};Database={self.database};UID={_USER};PWD={_PASSWORD}"
        )
        if self.tls:
            return f"{odbc};Encrypt=yes;TrustServerCertificate=yes"
        if driver == "mssql-python":
            return f"{odbc};Encrypt=no;TrustServerCertificate=yes"
        return odbc

    def connect_kwargs(self, driver: Literal["pymssql", "python-tds"]) -> dict[str, Any]:
        """Keyword arguments for `pymssql.connect` or `pytds.connect` that reach this server.
        With TLS, pymssql's require encryption; python-tds encrypts only given a `cafile` (a
        file holding `certificate_pem`) and `validate_host=False`."""
        if driver == "pymssql":
            return {
                "server": self.host,
                "port": str(self.port),
                "user": _USER,
                "password": _PASSWORD,
                "database": self.database,
                "autocommit": True,
            } | ({"encryption": "require"} if self.tls else {})
        return {
            "dsn": self.host,
            "port": self.port,
            "user": _USER,
            "password": _PASSWORD,
            "database": self.database,
            "autocommit": True,
        }

    def live_connections(self) -> int:
        """Connections open right now."""
        count: int = self._server.live_connections()
        return count

    def stop(self) -> None:
        """Close the listener and every connection, and wait for their threads; idempotent."""
        self._server.stop()

    def _end(self) -> None:  # the end of a `with` block
        self.stop()

    def __repr__(self) -> str:
        tls = ", tls" if self.tls else ""
        return f"TdsServer({self.host}:{self.port}, database={self.database!r}{tls})"


def serve(
    path: str | os.PathLike[str],
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    database: str | None = None,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    tls: bool = False,
    faults: Iterable[WireFault | Mapping[str, Any]] = (),
) -> TdsServer:
    """Start a TDS server over the emulator file at `path` and return its handle.

    Results stream: the server sends each full packet while rows are made, and a client's
    cancel (ATTENTION) stops a result and is acknowledged.

    Args:
        path: an emulator file (`Emulator.create`).
        host: an IPv4 address to listen on; keep 127.0.0.1 unless other machines must connect.
        port: the TCP port; 0 lets the system pick a free one (read it from the handle).
        database: the database name clients see; default the file's stem.
        max_connections: live connections accepted at once; one more gets SQL Server's error
            17809 at login.
        tls: offer TLS inside TDS, with a self-signed certificate for CN=localhost made now,
            valid one day and kept in memory: clients connect with `Encrypt=yes;
            TrustServerCertificate=yes` (or trust `certificate_pem`).
        faults: for tests only: errors, stalls, dropped connections and synthesized rows the
            server injects (`mssql_cdc.emulator.wire_faults`), as `WireFault`s or dicts.

    Raises:
        FileNotFoundError: `path` does not exist.
        OSError: the address cannot be bound (a port in use).
        ValueError: `host` is not an IPv4 address, a bound is out of range, or a fault is
            malformed.
    """
    if not 0 <= port <= 65535:
        raise ValueError(f"port {port} is out of range; give 0 to 65535 (0 picks a free port)")
    if max_connections < 1:
        raise ValueError(f"max_connections {max_connections} must be at least 1")
    script = [fault.as_native() for fault in wire_faults(faults)]
    p = Path(path)
    name = database or p.stem
    server = _native.tds.Server(str(p), host, port, name, max_connections, script, tls)
    return TdsServer(server)
