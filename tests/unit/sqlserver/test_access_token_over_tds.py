"""Options accessToken and accessTokenProvider log in through mssql-python to the emulator
served over TLS with a token (LOGIN7's FEDAUTH feature), and a refused token is SQL Server's
error 18456 with the token nowhere in the error or the logs (decisions 1385, 1386).

Oracle: SQL Server refuses a bad login with error 18456 (learn.microsoft.com/en-us/sql/
relational-databases/errors-events/mssqlserver-18456-database-engine-error); a JWT's `exp` is
its expiry in seconds since 1970 (RFC 7519 section 4.1.4), written here by hand.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import subprocess
import sys
import time
import types
from collections.abc import Iterator
from pathlib import Path

import mssql_python
import pytest

from mssql_cdc.emulator import Emulator, TdsServer, serve
from mssql_cdc.emulator.serve import token_expiry
from mssql_cdc.errors import ConfigError, ConnectError
from mssql_cdc.options.config import SourceConfig
from mssql_cdc.sqlserver.tsql import statements
from mssql_cdc.sqlserver.tsql.backend import connect
from mssql_cdc.sqlserver.tsql.drivers import error_number
from tests.unit.support.tds_emulator import one_order


def jwt(exp: int, subject: str) -> str:
    """An unsigned JWT (header.payload.signature, each base64url without padding)."""

    def part(value: dict[str, object]) -> str:
        raw = json.dumps(value).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    return f"{part({'alg': 'none'})}.{part({'exp': exp, 'oid': subject})}.c2lnbmF0dXJl"


TOKEN = jwt(4_102_444_800, "reader")  # 2100-01-01
WRONG = jwt(4_102_444_800, "someone-else")


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    emu: Emulator = one_order(Path(tmp_path_factory.mktemp("token")) / "shop.db")
    emu.close()
    return emu.path


@pytest.fixture
def server(path: Path) -> Iterator[TdsServer]:
    with serve(path, tls=True, access_token=TOKEN) as srv:
        yield srv


@pytest.fixture
def provider() -> Iterator[list[str]]:
    """Module `token_provider_for_tds`: `good()` hands out TOKEN, `wrong()` another token;
    each call is recorded."""
    calls: list[str] = []
    module = types.ModuleType("token_provider_for_tds")

    def good() -> str:
        calls.append("good")
        return TOKEN

    def wrong() -> str:
        calls.append("wrong")
        return WRONG

    module.good = good  # type: ignore[attr-defined]
    module.wrong = wrong  # type: ignore[attr-defined]
    sys.modules["token_provider_for_tds"] = module
    yield calls
    del sys.modules["token_provider_for_tds"]


def config(server: TdsServer, **credentials: str) -> SourceConfig:
    return SourceConfig.from_options(
        {
            "captureInstance": "dbo_orders",
            "connectionString": f"Server=127.0.0.1,{server.port};Database={server.database};"
            "Encrypt=yes;TrustServerCertificate=yes",
            "connectTimeout": 10,
            **credentials,
        }
    )


def test_a_provider_is_asked_for_a_token_at_every_connection_and_each_logs_in(
    server: TdsServer, provider: list[str]
) -> None:
    chosen = config(server, accessTokenProvider="token_provider_for_tds:good")
    for expected in range(1, 4):
        session = connect(chosen)
        try:
            assert session.scalar(statements.max_lsn()) is not None
        finally:
            session.close()
        assert len(provider) == expected


def test_a_fixed_access_token_option_logs_in(server: TdsServer) -> None:
    session = connect(config(server, accessToken=TOKEN))
    try:
        assert session.scalar(statements.max_lsn()) is not None
    finally:
        session.close()


def test_an_emulator_handle_serves_a_token_login_and_refuses_a_wrong_token(path: Path) -> None:
    emu = Emulator.open(path)
    try:
        with emu.serve(tls=True, access_token=TOKEN) as srv:
            session = connect(config(srv, accessToken=TOKEN))
            try:
                assert session.scalar(statements.max_lsn()) is not None
            finally:
                session.close()
            with pytest.raises(ConnectError) as caught:
                connect(config(srv, accessToken=WRONG))
    finally:
        emu.close()
    assert error_number(caught.value) == 18456


def test_a_wrong_token_is_login_failed_and_shows_in_no_error_or_log(
    server: TdsServer, provider: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    for credentials in (
        {"accessToken": WRONG},
        {"accessTokenProvider": "token_provider_for_tds:wrong"},
    ):
        with pytest.raises(ConnectError) as caught:
            connect(config(server, **credentials))
        assert error_number(caught.value) == 18456
        message = str(caught.value)
        assert "Login failed for user" in message
        assert "check the access token" in message
        seen = [message, repr(caught.value), str(caught.value.__cause__), caplog.text]
        assert not [text for text in seen if WRONG in text or TOKEN in text]
    assert provider == ["wrong"]


def test_an_expired_token_is_refused_though_it_is_the_servers(path: Path) -> None:
    expired = jwt(int(time.time()) - 60, "reader")
    assert token_expiry(expired) is not None
    with serve(path, tls=True, access_token=expired) as srv:
        with pytest.raises(ConnectError) as caught:
            connect(config(srv, accessToken=expired))
    assert error_number(caught.value) == 18456


def test_a_token_server_needs_tls_and_a_raising_provider_names_the_option(
    path: Path, server: TdsServer
) -> None:
    with pytest.raises(ValueError, match="access_token needs tls=True"):
        serve(path, access_token=TOKEN)
    with pytest.raises(ConfigError, match=r"option accessTokenProvider: .* cannot be imported"):
        connect(config(server, accessTokenProvider="no_such_token_module:token"))


def test_a_server_given_no_token_refuses_a_token_login_even_sent_in_the_clear(
    path: Path,
) -> None:
    # With Encrypt=no and a server that offers no TLS, the ODBC driver sends the token as is.
    # serve() takes a token only with TLS; the C++ tests cover a token server reached in clear.
    with serve(path) as plain:
        data = TOKEN.encode("utf-16-le")
        with pytest.raises(mssql_python.Error) as caught:
            mssql_python.connect(
                f"Server=127.0.0.1,{plain.port};Database=shop;Encrypt=no",
                attrs_before={1256: len(data).to_bytes(4, "little") + data},
                timeout=10,
            )
    assert error_number(caught.value) == 18456


def test_the_cli_serves_a_token_from_a_file_and_never_prints_it(path: Path, tmp_path: Path) -> None:
    token_file = tmp_path / "token.txt"
    token_file.write_text(TOKEN + "\n", encoding="utf-8")
    command = [sys.executable, "-m", "mssql_cdc.cli", "emulator", "serve", str(path)]
    refused = subprocess.run(
        [*command, "--access-token-file", str(token_file)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 2
    assert "--access-token-file needs --tls" in refused.stderr
    proc = subprocess.Popen(
        [*command, "--tls", "--access-token-file", str(token_file)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ | {"MSSQL_CDC_EMULATOR_PASSWORD": "Cli-Pa55word"},
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        port = int(first.rsplit(":", 1)[1].split()[0])
        lines = [proc.stdout.readline() for _ in range(5)]
        assert "access token" in lines[-1]
        data = TOKEN.encode("utf-16-le")
        conn = mssql_python.connect(
            f"Server=127.0.0.1,{port};Database=shop;Encrypt=yes;TrustServerCertificate=yes",
            attrs_before={1256: len(data).to_bytes(4, "little") + data},
            autocommit=True,
            timeout=10,
        )
        conn.close()
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=30)
    assert TOKEN not in first + "".join(lines) + out + err
