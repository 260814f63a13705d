"""Real SQL Server drivers (pymssql, mssql-python, python-tds) connected to a served emulator,
as a test's independent client: what they return is what a user's program would see."""

from __future__ import annotations

from typing import Any

import mssql_python
import pymssql
import pytds

from mssql_cdc.emulator import TdsServer


def connect(server: TdsServer, driver: str = "pymssql", *, timeout: int = 10) -> Any:
    """A new connection of `driver` ("pymssql", "mssql-python" or "python-tds") to `server`,
    autocommit on, with `timeout` seconds for the login and for each statement."""
    if driver == "pymssql":
        return pymssql.connect(
            **server.connect_kwargs("pymssql"), login_timeout=timeout, timeout=timeout
        )
    if driver == "mssql-python":
        return mssql_python.connect(
            server.connection_string("mssql-python"), autocommit=True, timeout=timeout
        )
    return pytds.connect(
        **server.connect_kwargs("python-tds"), timeout=timeout, login_timeout=timeout
    )


def fetch(server: TdsServer, sql: str, driver: str = "pymssql") -> list[tuple[Any, ...]]:
    """The rows of `sql`'s first result set, read on a connection of its own."""
    conn = connect(server, driver)
    try:
        cursor = conn.cursor()
        cursor.execute(sql)
        return [tuple(row) for row in cursor.fetchall()]
    finally:
        conn.close()
