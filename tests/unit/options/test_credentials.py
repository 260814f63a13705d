"""Options user, password, accessToken and accessTokenProvider: apart from the connection
string, never given twice, never shown."""

from __future__ import annotations

import pickle
import sys
import types
from collections.abc import Iterator

import pytest

from mssql_cdc.errors import ConfigError
from mssql_cdc.options.config import SourceConfig
from mssql_cdc.sqlserver.tsql.drivers import (
    SQL_COPT_SS_ACCESS_TOKEN,
    mssql_python_arguments,
    pymssql_arguments,
)

PASSWORD = " Pa55;word}{ "  # spaces, ';' and braces: passed as given, never quoted
TOKEN = "eyJ0eXAiOiJKV1QifQ.secret-token-body.sig"
CONN = "Server=db.example,1433;Database=shop"
BASE = {"captureInstance": "dbo_orders", "connectionString": CONN}


def parse(**extra: object) -> SourceConfig:
    return SourceConfig.from_options({**BASE, **extra})


@pytest.fixture
def provider_module() -> Iterator[list[str]]:
    """A module `tokens_for_test` whose `fresh()` returns a new token per call."""
    calls: list[str] = []
    module = types.ModuleType("tokens_for_test")

    def fresh() -> str:
        calls.append(f"token-{len(calls) + 1}")
        return calls[-1]

    module.fresh = fresh  # type: ignore[attr-defined]
    module.empty = lambda: ""  # type: ignore[attr-defined]
    sys.modules["tokens_for_test"] = module
    yield calls
    del sys.modules["tokens_for_test"]


def test_user_and_password_options_reach_each_driver_as_arguments_of_their_own() -> None:
    config = parse(user="etl", password=PASSWORD)
    assert config.connection_string is not None
    assert PASSWORD not in config.connection_string.text
    args = mssql_python_arguments(config.connection_string, 5, config.credentials)
    assert (args["uid"], args["pwd"]) == ("etl", PASSWORD)  # untrimmed, as the store gave it
    config = parse(user="etl", password=PASSWORD, backend="pymssql")
    assert config.connection_string is not None
    args = pymssql_arguments(config.connection_string, 5, config.credentials)
    assert (args["user"], args["password"]) == ("etl", PASSWORD)


def test_a_password_option_beside_a_uid_key_is_accepted_but_never_beside_a_pwd_key() -> None:
    config = parse(connectionString=CONN + ";UID=etl", password=PASSWORD)
    assert config.credentials.password == PASSWORD
    with pytest.raises(ConfigError, match="option password and the connectionString key PWD") as e:
        parse(connectionString=CONN + ";PWD=other", password=PASSWORD)
    assert "other" not in str(e.value)
    assert PASSWORD.strip() not in str(e.value)
    with pytest.raises(ConfigError, match="option user and the connectionString key UID"):
        parse(connectionString=CONN + ";uid=etl", user="etl")


def test_credentials_are_refused_with_the_emulator_backend_and_when_empty() -> None:
    with pytest.raises(ConfigError, match="option password is for backends mssql-python"):
        SourceConfig.from_options(
            {"captureInstance": "x", "backend": "emulator", "emulatorPath": __file__}
            | {"password": "p"}
        )
    with pytest.raises(ConfigError, match="option user must not be empty"):
        parse(user="  ")


def test_an_access_token_is_refused_with_pymssql_naming_the_driver_and_what_to_use() -> None:
    with pytest.raises(ConfigError) as caught:
        parse(backend="pymssql", accessToken=TOKEN)
    message = str(caught.value)
    assert "pymssql (FreeTDS) cannot send a Microsoft Entra access token" in message
    assert "backend=mssql-python" in message
    assert TOKEN not in message


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        ({"accessToken": TOKEN, "accessTokenProvider": "m:f"}, "both give the access token"),
        ({"accessToken": TOKEN, "user": "etl"}, "options user and password cannot be given"),
        ({"accessToken": TOKEN, "connectionString": CONN + ";UID=etl"}, r"\(Uid\)"),
        (
            {"accessTokenProvider": "m:f", "connectionString": CONN + ";Authentication=x"},
            r"\(Authentication\)",
        ),
        ({"accessTokenProvider": "not a function"}, "must be package.module:function"),
        ({"accessToken": TOKEN, "connectionString": CONN + ";Encrypt=no"}, "needs an encrypted"),
    ],
)
def test_a_token_beside_another_login_or_a_malformed_provider_is_refused(
    extra: dict[str, str], match: str
) -> None:
    with pytest.raises(ConfigError, match=match) as caught:
        parse(**extra)
    assert TOKEN not in str(caught.value)


def test_the_provider_is_called_for_every_token_and_a_fixed_token_is_sent_as_odbc_wants(
    provider_module: list[str],
) -> None:
    config = parse(accessTokenProvider="tokens_for_test:fresh")
    assert config.connection_string is not None
    first = mssql_python_arguments(config.connection_string, 5, config.credentials)
    second = mssql_python_arguments(config.connection_string, 5, config.credentials)
    assert provider_module == ["token-1", "token-2"]
    # ODBC's SQL_COPT_SS_ACCESS_TOKEN (1256): a 4-byte little-endian length, then UTF-16LE
    # (learn.microsoft.com/en-us/sql/connect/odbc/using-azure-active-directory).
    utf16 = "token-2".encode("utf-16-le")
    assert SQL_COPT_SS_ACCESS_TOKEN == 1256
    assert second["attrs_before"][1256] == len(utf16).to_bytes(4, "little") + utf16
    assert first["attrs_before"][1256] != second["attrs_before"][1256]
    assert "uid" not in second
    assert "pwd" not in second
    fixed = parse(accessToken=TOKEN)
    assert fixed.connection_string is not None
    args = mssql_python_arguments(fixed.connection_string, 5, fixed.credentials)
    assert args["attrs_before"][1256][4:].decode("utf-16-le") == TOKEN


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("tokens_for_test:empty", "returned an empty string"),
        ("tokens_for_test:missing", "has no function missing"),
        ("no_such_module_for_tokens:f", "module no_such_module_for_tokens cannot be imported"),
    ],
)
def test_a_provider_that_cannot_give_a_token_is_an_error_naming_the_option(
    provider_module: list[str], spec: str, match: str
) -> None:
    config = parse(accessTokenProvider=spec)
    with pytest.raises(ConfigError, match="option accessTokenProvider: .*" + match):
        config.credentials.token()


def test_no_secret_shows_in_a_repr_and_the_options_round_trip_for_the_readers() -> None:
    config = parse(user="etl", password=PASSWORD)
    assert PASSWORD.strip() not in repr(config)
    assert "password=<hidden>" in repr(config)
    assert "user='etl'" in repr(config)
    tokened = parse(accessToken=TOKEN)
    assert TOKEN not in repr(tokened)
    assert TOKEN not in repr(tokened.credentials)
    for one in (config, tokened, parse(accessTokenProvider="pkg.mod:make")):
        again = SourceConfig.from_options(one.to_options())
        assert again.credentials.to_options() == one.credentials.to_options()
        assert pickle.loads(pickle.dumps(one)).credentials.to_options() == (
            one.credentials.to_options()
        )
    assert config.to_options()["password"] == PASSWORD


def test_a_driver_error_that_quotes_a_secret_has_it_cut_out_of_the_connect_error() -> None:
    from mssql_cdc.sqlserver.tsql.drivers import connect_error

    config = parse(user="etl", password=PASSWORD)
    assert config.connection_string is not None
    fresh = "token-from-a-provider"
    driver_text = f"login with {PASSWORD} and {fresh} and {TOKEN} refused"
    for token in (fresh, None):
        made = connect_error(
            "mssql-python",
            config.connection_string,
            5,
            RuntimeError(driver_text),
            config.credentials,
            token,
        )
        assert PASSWORD.strip() not in str(made)
    assert fresh not in str(
        connect_error(
            "mssql-python", config.connection_string, 5, RuntimeError(driver_text), None, fresh
        )
    )
    tokened = parse(accessToken=TOKEN)
    assert tokened.connection_string is not None
    made = connect_error(
        "mssql-python", tokened.connection_string, 5, RuntimeError(driver_text), tokened.credentials
    )
    assert TOKEN not in str(made)
