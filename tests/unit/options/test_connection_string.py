"""ODBC connection strings: parsed exactly, including braced values, never echoed."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mssql_cdc.errors import ConfigError
from mssql_cdc.options.config import SourceConfig
from mssql_cdc.options.connection_string import ConnectionString

keys = (
    st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz ", min_size=1)
    .map(str.strip)
    .filter(bool)
)
values = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=20)


def braced(value: str) -> str:
    return "{" + value.replace("}", "}}") + "}"


@settings(derandomize=True, database=None, max_examples=300)
@given(pairs=st.lists(st.tuples(keys, values), min_size=1, max_size=5))
def test_braced_values_round_trip_whatever_they_hold(pairs: list[tuple[str, str]]) -> None:
    text = ";".join(f"{k}={braced(v)}" for k, v in pairs)
    parsed = ConnectionString.parse(text)
    assert parsed.pairs == tuple(pairs)
    assert parsed.text == text


def test_plain_values_are_trimmed_and_empty_parts_skipped() -> None:
    parsed = ConnectionString.parse(" Server = db,1433 ;; Database=shop ; UID=u;PWD=;")
    assert parsed.pairs == (("Server", "db,1433"), ("Database", "shop"), ("UID", "u"), ("PWD", ""))
    assert parsed.get("server") == "db,1433"
    assert parsed.get("missing") is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "must not be empty"),
        ("   ", "must not be empty"),
        ("Server", "has no '='"),
        ("=S3cr3t", "is empty"),
        ("PWD={S3cr3t", "is never closed"),
        ("PWD={S3}cr3t;Server=x", "text follows a closing '}'"),
    ],
)
def test_malformed_strings_are_refused_without_quoting_values(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        ConnectionString.parse(text)
    assert "cr3t" not in str(caught.value)


def test_the_repr_shows_keys_only() -> None:
    parsed = ConnectionString.parse("Server=db;PWD={p@ss;word}")
    assert repr(parsed) == "ConnectionString(keys=['Server', 'PWD'], values hidden)"


@pytest.mark.parametrize(
    ("text", "secret_key"),
    [
        ("Server=db;UID=u;PWD=ab;S3cret!=zz", "PWD"),
        ("UID=u;PWD=a=b;S3cret!=zz;Database=d", "PWD"),
        ("PWD=ab;S3cret!;x=zz", None),  # the key holds ';': refused by the parser, unquoted
        ("pwd = ab ; S3cret! = zz", "pwd"),
    ],
)
def test_with_pymssql_the_rest_of_an_unbraced_password_is_never_quoted(
    text: str, secret_key: str | None
) -> None:
    with pytest.raises(ConfigError) as caught:
        SourceConfig.from_options(
            {"captureInstance": "dbo_orders", "backend": "pymssql", "connectionString": text}
        )
    message = str(caught.value)
    assert "S3cret" not in message
    assert "zz" not in message
    if secret_key is not None:
        assert f"the key after {secret_key} is not one backend 'pymssql' accepts" in message
        assert f"write {secret_key}={{...}}, and '}}}}' for a '}}' inside it" in message


def test_with_pymssql_a_misspelt_key_after_a_plain_value_is_named() -> None:
    with pytest.raises(ConfigError, match="key 'Databse' is not supported with backend"):
        SourceConfig.from_options(
            {
                "captureInstance": "dbo_orders",
                "backend": "pymssql",
                "connectionString": "Server=db;Databse=shop;PWD={ab;S3cret!=zz}",
            }
        )


def test_an_unknown_mssql_python_keyword_is_refused_naming_it_and_the_known_ones() -> None:
    options = {
        "captureInstance": "dbo_t",
        "backend": "mssql-python",
        "connectionString": "Server=h,1433;Bogus=1;UID=u;PWD=p4ss",
    }
    with pytest.raises(ConfigError) as caught:
        SourceConfig.from_options(options)
    message = str(caught.value)
    assert "key 'Bogus' is not supported with backend 'mssql-python'" in message
    assert "Trustservercertificate" in message
    assert "Multisubnetfailover" in message
    assert "p4ss" not in message


def test_every_keyword_mssql_python_accepts_is_accepted() -> None:
    from mssql_python.constants import _ALLOWED_CONNECTION_STRING_PARAMS as allowed

    for key in allowed:
        if key in ("driver", "app"):  # mssql-python sets these itself and refuses them
            continue
        text = f"Server=h,1433;{key}=x"
        config = SourceConfig.from_options({"captureInstance": "dbo_t", "connectionString": text})
        assert config.connection_string is not None
