"""The source's backend for a Spark test: the emulator in process, or the same emulator file
served over TDS and read through a real SQL Server driver (issue 15).

A served file gets one server per test; `stop_servers()` (an autouse fixture of the Spark
conftest) stops them when the test ends.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from mssql_cdc.emulator.serve import TdsServer, serve

Backend = Literal["emulator", "mssql-python", "pymssql"]

BACKENDS: tuple[Backend, ...] = ("emulator", "mssql-python", "pymssql")
"""Every backend a source can read the emulator through: in process, and over the wire."""

_servers: dict[Path, TdsServer] = {}


def backend_options(path: Path, backend: Backend) -> dict[str, str]:
    """The source options reading the emulator file at `path` through `backend`."""
    if backend == "emulator":
        return {"backend": "emulator", "emulatorPath": str(path)}
    key = path.resolve()
    server = _servers.get(key)
    if server is None:
        server = _servers[key] = serve(key)
    return {"backend": backend, "connectionString": server.connection_string(backend)}


def server_of(path: Path) -> TdsServer:
    """The server `backend_options` started for the file at `path` (a T-SQL backend's), for a
    test that writes through it."""
    return _servers[path.resolve()]


def stop_servers() -> None:
    """Stop every server this test started."""
    while _servers:
        _, server = _servers.popitem()
        server.stop()
