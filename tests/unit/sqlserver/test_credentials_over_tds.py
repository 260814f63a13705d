"""Options user and password log in through each driver against the served emulator, and a
failed login shows the password nowhere: not in the error, not in the logs."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from mssql_cdc.emulator import Emulator, TdsServer
from mssql_cdc.errors import ConnectError
from mssql_cdc.options.config import SourceConfig
from mssql_cdc.sqlserver.tsql import statements
from mssql_cdc.sqlserver.tsql.backend import connect
from mssql_cdc.sqlserver.tsql.drivers import error_number
from tests.unit.support.tds_emulator import one_order

PASSWORD = "Opt-Pa55;word{x}"  # ';' and braces: a pasted PWD=... would break the string
WRONG = "Wr0ng-Secret-Value"
DRIVERS = ("mssql-python", "pymssql")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TdsServer]:
    emu: Emulator = one_order(Path(tmp_path_factory.mktemp("creds")) / "shop.db")
    try:
        with emu.serve(password=PASSWORD) as srv:
            yield srv
    finally:
        emu.close()


def options(server: TdsServer, driver: str, password: str) -> SourceConfig:
    text = f"Server=127.0.0.1,{server.port};Database={server.database}"
    if driver == "mssql-python":
        text += ";Encrypt=no;TrustServerCertificate=yes"
    return SourceConfig.from_options(
        {
            "captureInstance": "dbo_orders",
            "backend": driver,
            "connectionString": text,
            "user": server.login,
            "password": password,
            "connectTimeout": 10,
        }
    )


@pytest.mark.parametrize("driver", DRIVERS)
def test_options_user_and_password_log_in_without_being_in_the_connection_string(
    server: TdsServer, driver: str
) -> None:
    config = options(server, driver, PASSWORD)
    assert config.connection_string is not None
    assert "PWD" not in config.connection_string.text.upper()
    session = connect(config)
    try:
        assert session.scalar(statements.max_lsn()) is not None
    finally:
        session.close()


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_wrong_password_option_is_login_failed_and_shown_in_no_error_or_log(
    server: TdsServer, driver: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    config = options(server, driver, WRONG)
    with pytest.raises(ConnectError) as caught:
        connect(config)
    # SQL Server's answer to a wrong password is error 18456 (learn.microsoft.com/en-us/sql/
    # relational-databases/errors-events/mssqlserver-18456-database-engine-error).
    assert error_number(caught.value) == 18456
    message = str(caught.value)
    assert "options user and password" in message
    seen = [message, repr(caught.value), str(caught.value.__cause__), caplog.text, repr(config)]
    assert not [text for text in seen if WRONG in text]
