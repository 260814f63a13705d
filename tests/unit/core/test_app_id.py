"""The app_id grammar: one check, its accept and refuse lists, and messages that say the rule."""

from __future__ import annotations

import pytest

from mssql_cdc.core.app_id import MAX_APP_ID_LENGTH, validate_app_id
from mssql_cdc.errors import ConfigError

# Every app_id the tests, docs and demo use stays valid, with a few edge cases of the rule.
ACCEPTED = [
    "orders",
    "orders-v1",
    "orders-demo",
    "guard-v1",
    "life-v1",
    "cli-v1",
    "billing",
    "a",
    "7",
    "_orders",
    "Orders_2026.v1",
    "orders.g",
    "orders.gx1",
    "orders.g1x",
    "x" * MAX_APP_ID_LENGTH,
]

REFUSED = [
    ("..", "'..'"),
    (".", "starts with '.'"),
    ("../metrics", "path separator '/'"),
    ("a..b", "'..'"),
    ("a/b", "path separator '/'"),
    ("a\\b", "path separator '\\\\'"),
    ("/orders", "path separator '/'"),
    ("orders.g1", "generation 1 of the stream 'orders'"),
    ("orders.g12", "generation 12 of the stream 'orders'"),
    ("orders.g01", "ends in '.g01'"),
    (".hidden", "starts with '.'"),
    ("-orders", "starts with '-'"),
    ("orders.", "ends with '.'"),
    ("a#b", "contains '#'"),
    ("orders v1", "contains ' '"),
    ("orders\n", "control character"),
    ("ordérs", "contains 'é'"),
    ("x" * (MAX_APP_ID_LENGTH + 1), f"over the limit of {MAX_APP_ID_LENGTH}"),
]


@pytest.mark.parametrize("app_id", ACCEPTED)
def test_the_grammar_accepts_plain_names(app_id: str) -> None:
    assert validate_app_id(app_id) == app_id


@pytest.mark.parametrize(("app_id", "says"), REFUSED, ids=[repr(a)[:30] for a, _ in REFUSED])
def test_the_grammar_refuses_a_bad_app_id_saying_why_and_what_is_allowed(
    app_id: str, says: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        validate_app_id(app_id)
    message = str(refused.value)
    assert says in message
    assert "app_id=" in message
    assert f"1 to {MAX_APP_ID_LENGTH} ASCII letters, digits, '_', '-' and '.'" in message


@pytest.mark.parametrize("value", [None, "", 7, b"orders"])
def test_a_missing_or_non_string_app_id_is_refused(value: object) -> None:
    with pytest.raises(ConfigError, match="non-empty string"):
        validate_app_id(value)


def test_a_huge_app_id_is_not_quoted_whole() -> None:
    with pytest.raises(ConfigError) as refused:
        validate_app_id("y" * 1_000_000)
    assert len(str(refused.value)) < 500
    assert "1000000 characters" in str(refused.value)
