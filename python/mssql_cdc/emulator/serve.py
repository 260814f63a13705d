"""The emulator over the network: a TDS server that SQL Server drivers connect to.

`Emulator.serve()` and `mssql-cdc emulator serve` start one. The protocol and the statements it
answers live in C++ (`cpp/src/tds`, decision 0700); this module holds the handle a caller gets.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from mssql_cdc import _native

__all__ = ["DEFAULT_MAX_CONNECTIONS", "ClientDriver", "TdsServer", "serve"]

ClientDriver = Literal["mssql-python", "pymssql", "python-tds", "jdbc"]

DEFAULT_MAX_CONNECTIONS = 64
"""Live connections one server accepts; a connection past it is closed at once."""

# The server accepts any login: these are what the handle's connection strings carry.
_USER = "sa"
_PASSWORD = "emulator"


class TdsServer:
    """A running TDS front end over one emulator file, until `stop()` (or the `with` block ends).

    Attributes:
        host: the address it listens on.
        port: the TCP port, chosen by the system when `serve` was given port 0.
        database: the database name clients see and may name in a login or `USE`.
    """

    def __init__(self, server: Any) -> None:
        """Use `serve()` or `Emulator.serve()`."""
        self._server: Any = server
        self.host: str = server.host
        self.port: int = server.port
        self.database: str = server.database

    def connection_string(self, driver: ClientDriver) -> str:
        """A ready connection string for `driver`.

        `mssql-python` and `pymssql` get the ODBC-style form the library's `connectionString`
        option takes (`Server=host,port;Database=...;UID=...;PWD=...`); mssql-python's adds
        `Encrypt=no`, since this server offers no TLS and ODBC 18 encrypts by default, and
        pymssql's holds only the keys its backend reads. `python-tds` gets pymssql's form;
        `jdbc` gets Microsoft's JDBC URL with `encrypt=false`.
        """
        if driver == "jdbc":
            return (
                f"jdbc:sqlserver://{self.host}:{self.port};databaseName={self.database};"
                f"user={_USER};password={_PASSWORD};encrypt=false;trustServerCertificate=true"
            )
        odbc = (
            f"Server={self.host},{self.port};Database={self.database};UID={_USER};PWD={_PASSWORD}"
        )
        if driver == "mssql-python":
            return f"{odbc};Encrypt=no;TrustServerCertificate=yes"
        return odbc

    def connect_kwargs(self, driver: Literal["pymssql", "python-tds"]) -> dict[str, Any]:
        """Keyword arguments for `pymssql.connect` or `pytds.connect` that reach this server."""
        if driver == "pymssql":
            return {
                "server": self.host,
                "port": str(self.port),
                "user": _USER,
                "password": _PASSWORD,
                "database": self.database,
                "autocommit": True,
            }
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

    def __enter__(self) -> TdsServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"TdsServer({self.host}:{self.port}, database={self.database!r})"


def serve(
    path: str | os.PathLike[str],
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    database: str | None = None,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
) -> TdsServer:
    """Start a TDS server over the emulator file at `path` and return its handle.

    Args:
        path: an emulator file (`Emulator.create`).
        host: an IPv4 address to listen on; keep 127.0.0.1 unless other machines must connect.
        port: the TCP port; 0 lets the system pick a free one (read it from the handle).
        database: the database name clients see; default the file's stem.
        max_connections: live connections accepted at once.

    Raises:
        FileNotFoundError: `path` does not exist.
        OSError: the address cannot be bound (a port in use).
        ValueError: `host` is not an IPv4 address, or a bound is out of range.
    """
    if not 0 <= port <= 65535:
        raise ValueError(f"port {port} is out of range; give 0 to 65535 (0 picks a free port)")
    if max_connections < 1:
        raise ValueError(f"max_connections {max_connections} must be at least 1")
    p = Path(path)
    server = _native.tds.Server(str(p), host, port, database or p.stem, max_connections)
    return TdsServer(server)
