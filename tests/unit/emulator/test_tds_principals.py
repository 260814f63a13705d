"""CREATE LOGIN, CREATE USER, GRANT SELECT and ALTER ROLE over TDS (decision 1366).

Oracles: Microsoft's documentation, with pymssql (mssql-python for a refused login) as the
clients. CREATE LOGIN ... WITH PASSWORD makes a SQL login that logs in with that password
(https://learn.microsoft.com/en-us/sql/t-sql/statements/create-login-transact-sql); a wrong
password is error 18456 "Login failed for user '<name>'."
(https://learn.microsoft.com/en-us/sql/relational-databases/errors-events/mssqlserver-18456-database-engine-error).
CREATE USER ... FOR LOGIN maps a user to it
(https://learn.microsoft.com/en-us/sql/t-sql/statements/create-user-transact-sql); GRANT SELECT
on an object or a schema gives the read
(https://learn.microsoft.com/en-us/sql/t-sql/statements/grant-object-permissions-transact-sql),
without which a SELECT fails with 229 "The SELECT permission was denied on the object '%.*ls',
database '%.*ls', schema '%.*ls'."; ALTER ROLE ... ADD MEMBER joins a role
(https://learn.microsoft.com/en-us/sql/t-sql/statements/alter-role-transact-sql). Errors 15007,
15023, 15025 and 15151 carry the texts of
https://learn.microsoft.com/en-us/sql/relational-databases/errors-events/database-engine-events-and-errors-15000-to-15999.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mssql_python
import pymssql
import pytest

from mssql_cdc.emulator import Emulator, TdsServer
from tests.unit.support.emulator_oracle import at

SECRET = "Rd-0nly-Pa55!"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[TdsServer]:
    emu = Emulator.create(tmp_path / "shop.db", start="2026-09-28T13:50:00")
    emu.create_table("dbo.orders", {"order_id": "int"}, primary_key="order_id")
    emu.create_table("dbo.secrets", {"id": "int"}, primary_key="id")
    emu.enable_cdc("dbo.orders", role_name="cdc_reader")
    emu.commit([("insert", "dbo.orders", {"order_id": 1})], at=at(1))
    with emu.serve() as srv:
        yield srv
    emu.close()


def connect(server: TdsServer, user: str | None = None, password: str | None = None) -> Any:
    kwargs = server.connect_kwargs("pymssql")
    if user is not None:
        kwargs |= {"user": user, "password": password}
    return pymssql.connect(**kwargs, login_timeout=10, timeout=10)


def run(server: TdsServer, *statements: str) -> None:
    with connect(server) as conn:
        cursor = conn.cursor()
        for sql in statements:
            cursor.execute(sql)


def error_of(
    server: TdsServer, sql: str, user: str | None = None, password: str | None = None
) -> tuple[int, str]:
    with connect(server, user, password) as conn, pytest.raises(pymssql.Error) as raised:
        cursor = conn.cursor()
        cursor.execute(sql)
        cursor.fetchall()
    number, raw = raised.value.args[0], raised.value.args[1]
    return int(number), raw.decode().split("DB-Lib error message", 1)[0].strip()


SETUP = (
    f"CREATE LOGIN reader WITH PASSWORD = '{SECRET}'",
    "CREATE USER reader FOR LOGIN reader",
    "GRANT SELECT ON dbo.orders TO reader",
    "GRANT SELECT ON cdc.dbo_orders_CT TO reader",
    "ALTER ROLE cdc_reader ADD MEMBER reader",
)


def test_a_created_login_connects_with_its_password(server: TdsServer) -> None:
    run(server, *SETUP)
    with connect(server, "reader", SECRET) as conn:
        cursor = conn.cursor()
        cursor.execute("SELECT order_id FROM dbo.orders")
        assert cursor.fetchall() == [(1,)]


def test_a_created_login_with_a_wrong_password_is_refused_with_18456(server: TdsServer) -> None:
    run(server, *SETUP)
    # mssql-python: a failed pymssql login leaves pymssql's later login errors without their
    # text in the same process (tests/unit/sqlserver/test_driver_errors.py reads them).
    odbc = (
        f"Server={server.host},{server.port};Database=shop;UID=reader;PWD=not-{SECRET};"
        "Encrypt=no;TrustServerCertificate=yes"
    )
    with pytest.raises(mssql_python.Error) as text:
        mssql_python.connect(odbc, autocommit=True, timeout=10)
    assert "Login failed for user 'reader'." in str(text.value)
    assert SECRET not in str(text.value)


def test_the_login_is_kept_in_the_file_as_a_hash_never_in_clear(
    server: TdsServer, tmp_path: Path
) -> None:
    run(server, *SETUP)
    files = list(tmp_path.glob("shop.db*"))
    assert files
    for f in files:
        assert SECRET.encode() not in f.read_bytes()
        assert SECRET.encode("utf-16-le") not in f.read_bytes()
    with connect(server, "reader", SECRET):  # kept: a new connection reads it from the file
        pass


def test_a_select_the_login_was_not_granted_fails_with_229(server: TdsServer) -> None:
    run(server, *SETUP)
    assert error_of(server, "SELECT id FROM dbo.secrets", "reader", SECRET) == (
        229,
        "The SELECT permission was denied on the object 'secrets', database 'shop', schema 'dbo'.",
    )


def test_a_schema_grant_to_a_role_reaches_its_members(server: TdsServer) -> None:
    run(server, *SETUP[:2], "GRANT SELECT ON SCHEMA::dbo TO cdc_reader")
    assert error_of(server, "SELECT id FROM dbo.secrets", "reader", SECRET)[0] == 229
    run(server, "ALTER ROLE cdc_reader ADD MEMBER reader")
    with connect(server, "reader", SECRET) as conn:
        cursor = conn.cursor()
        cursor.execute("SELECT id FROM dbo.secrets")
        assert cursor.fetchall() == []


def test_outside_the_gating_role_the_login_gets_zeros_and_229_from_the_change_function(
    server: TdsServer,
) -> None:
    run(server, *SETUP[:4])
    with connect(server, "reader", SECRET) as conn:
        cursor = conn.cursor()
        cursor.execute("SELECT sys.fn_cdc_get_min_lsn('dbo_orders')")
        assert cursor.fetchall() == [(bytes(10),)]
    number, _ = error_of(
        server,
        "SELECT * FROM cdc.fn_cdc_get_all_changes_dbo_orders("
        "sys.fn_cdc_get_min_lsn('dbo_orders'), sys.fn_cdc_get_max_lsn(), N'all')",
        "reader",
        SECRET,
    )
    assert number == 229


def test_principal_statements_are_refused_with_sql_servers_numbers(server: TdsServer) -> None:
    run(server, *SETUP[:2])
    assert error_of(server, "CREATE LOGIN reader WITH PASSWORD = 'x-Y-z-123'") == (
        15025,
        "The server principal 'reader' already exists.",
    )
    assert error_of(server, "CREATE USER reader FOR LOGIN reader") == (
        15023,
        "User, group, or role 'reader' already exists in the current database.",
    )
    assert error_of(server, "CREATE USER ghost FOR LOGIN ghost") == (
        15007,
        "'ghost' is not a valid login or you do not have permission.",
    )
    assert error_of(server, "GRANT SELECT ON dbo.orders TO ghost") == (
        15151,
        "Cannot find the user 'ghost', because it does not exist or you do not have permission.",
    )
    assert error_of(server, "GRANT SELECT ON dbo.nothing TO reader") == (
        15151,
        "Cannot find the object 'dbo.nothing', because it does not exist or you do not have "
        "permission.",
    )
    assert error_of(server, "ALTER ROLE no_such_role ADD MEMBER reader")[0] == 15151


def test_a_refused_create_login_never_quotes_its_password(server: TdsServer) -> None:
    number, text = error_of(server, f"CREATE LOGIN sa WITH PASSWORD = '{SECRET}'")
    assert number == 15025
    assert SECRET not in text
    number, text = error_of(server, f"CREATE LOGIN x WITH PASSWORD = '{SECRET}' MUST_CHANGE")
    assert SECRET not in text


def test_has_perms_by_name_agrees_with_the_grants(server: TdsServer) -> None:
    run(server, *SETUP)
    with connect(server, "reader", SECRET) as conn:
        cursor = conn.cursor()
        cursor.execute(
            "SELECT HAS_PERMS_BY_NAME('dbo.orders', 'OBJECT', 'SELECT'), "
            "HAS_PERMS_BY_NAME('cdc.dbo_orders_CT', 'OBJECT', 'SELECT'), "
            "HAS_PERMS_BY_NAME('dbo.secrets', 'OBJECT', 'SELECT')"
        )
        assert cursor.fetchall() == [(1, 1, 0)]
