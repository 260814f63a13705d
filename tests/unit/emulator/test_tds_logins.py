"""SQL logins of the emulator's TDS server, through drivers nobody here wrote.

The oracle is Microsoft's documentation of error 18456, "Login failed for user '<user_name>'."
(https://learn.microsoft.com/en-us/sql/relational-databases/errors-events/mssqlserver-18456-database-engine-error),
(Error 4060 for another database is older; the GoogleTest suite holds it.)
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import mssql_python
import pymssql
import pytest

from mssql_cdc.emulator import Emulator, TdsServer
from mssql_cdc.emulator.serve import serve

PASSWORD = "Corr3ct-Horse!"


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[Emulator]:
    emu = Emulator.create(tmp_path / "shop.db", start="2026-09-28T13:50:00")
    emu.create_table("dbo.orders", {"order_id": "int"}, primary_key="order_id")
    yield emu
    emu.close()


@pytest.fixture
def server(emulator: Emulator) -> Iterator[TdsServer]:
    with emulator.serve(password=PASSWORD) as srv:
        yield srv


def odbc_login(server: TdsServer, user: str, password: str, database: str = "shop") -> str:
    """The error text mssql-python's connect raises (ODBC's messages carry no number)."""
    text = (
        f"Server={server.host},{server.port};Database={database};UID={user};PWD={password};"
        "Encrypt=no;TrustServerCertificate=yes"
    )
    with pytest.raises(mssql_python.Error) as refused:
        mssql_python.connect(text, autocommit=True, timeout=10)
    return str(refused.value)


def test_the_right_password_logs_in_with_pymssql_and_mssql_python(server: TdsServer) -> None:
    conn = pymssql.connect(**server.connect_kwargs("pymssql"), login_timeout=10)
    conn.close()
    assert server.password == PASSWORD
    odbc = mssql_python.connect(server.connection_string("mssql-python"), autocommit=True)
    odbc.close()


def test_a_wrong_password_is_login_failed_for_the_user_without_the_password(
    server: TdsServer,
) -> None:
    text = odbc_login(server, "sa", "Wr0ng-Guess!")
    assert "Login failed for user 'sa'." in text
    assert "Wr0ng-Guess!" not in text


def test_an_unknown_login_with_the_right_password_is_refused(server: TdsServer) -> None:
    text = odbc_login(server, "mallory", PASSWORD)
    assert "Login failed for user 'mallory'." in text
    assert PASSWORD not in text


def test_pymssql_with_a_wrong_password_gets_18456(server: TdsServer) -> None:
    kwargs = server.connect_kwargs("pymssql") | {"password": "nope"}
    with pytest.raises(pymssql.Error) as refused:
        pymssql.connect(**kwargs, login_timeout=10)
    assert "18456" in str(refused.value)


def test_a_database_user_logs_in_with_the_servers_password(
    emulator: Emulator, server: TdsServer
) -> None:
    emulator.create_user("alice")
    kwargs = server.connect_kwargs("pymssql") | {"user": "alice"}
    conn = pymssql.connect(**kwargs, login_timeout=10)
    conn.close()


def test_a_default_password_is_random_and_repr_never_shows_it(emulator: Emulator) -> None:
    with serve(emulator.path) as first, serve(emulator.path) as second:
        assert first.password != second.password
        assert len(first.password) >= 16
        assert first.password not in repr(first)
        conn = pymssql.connect(**first.connect_kwargs("pymssql"), login_timeout=10)
        conn.close()


def test_serving_on_an_address_other_machines_reach_warns(emulator: Emulator) -> None:
    with pytest.warns(UserWarning, match="reachable from other machines"):
        srv = serve(emulator.path, host="0.0.0.0")
    srv.stop()
