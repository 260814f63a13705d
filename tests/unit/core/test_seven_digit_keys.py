"""Time keys of seven fractional digits outside the server (decisions 1343, 1344).

The oracles: `datetime2`, `time` and `datetimeoffset` keep 100 ns at scale 7, their default
(https://learn.microsoft.com/en-us/sql/t-sql/data-types/datetime2-transact-sql), and CONVERT of
a datetime2(7) to text writes `yyyy-mm-dd hh:mi:ss.nnnnnnn`
(https://learn.microsoft.com/en-us/sql/t-sql/functions/cast-and-convert-transact-sql), text of
fixed width whose character order is the value's order; a datetimeoffset's text carries its
offset and compares in UTC
(https://learn.microsoft.com/en-us/sql/t-sql/data-types/datetimeoffset-transact-sql). The
expected orders below are written by hand.
"""

from __future__ import annotations

from datetime import datetime, time

import pytest

from mssql_cdc.core import check_time_key, sort_part, text_key, time_scale, typed_part
from mssql_cdc.errors import ConfigError

# Written in the order SQL Server keeps them: 100 ns apart, before 1970 and at the very end.
SEVEN_DIGITS = [
    "0001-01-01 00:00:00.0000000",
    "0001-01-01 00:00:00.0000001",
    "1969-12-31 23:59:59.9999998",
    "1969-12-31 23:59:59.9999999",
    "1970-01-01 00:00:00.0000000",
    "2026-01-01 12:00:00.1234567",
    "2026-01-01 12:00:00.1234568",
    "9999-12-31 23:59:59.9999998",
    "9999-12-31 23:59:59.9999999",
]


def test_the_scale_of_a_time_type_defaults_to_seven_and_other_types_have_none() -> None:
    assert [time_scale(t) for t in ("datetime2", "datetime2(3)", "time(7)", "datetimeoffset")] == [
        7,
        3,
        7,
        7,
    ]
    assert time_scale("datetime") is None
    assert time_scale("int") is None


@pytest.mark.parametrize(
    ("sql_type", "held"),
    [
        ("datetime2(7)", "timestamp_ntz"),
        ("datetimeoffset(7)", "timestamp"),
        ("datetime2", "timestamp_ntz"),
    ],
)
def test_a_seven_digit_time_key_held_as_a_spark_time_is_refused_naming_column_type_and_remedies(
    sql_type: str, held: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        check_time_key("apply_changes: bronze b", "placed_at", sql_type, held)
    message = str(caught.value)
    base = sql_type.split("(")[0]
    assert f"key column placed_at is {base}(7)" in message
    assert "columns option" in message
    assert f"{base}(6)" in message


@pytest.mark.parametrize(
    ("sql_type", "held"),
    [
        ("datetime2(6)", "timestamp_ntz"),
        ("datetimeoffset(3)", "timestamp"),
        ("datetime2(7)", "string"),
        ("time(7)", "string"),
        ("datetime", "timestamp_ntz"),
        ("int", "integer"),
    ],
)
def test_keys_spark_keeps_apart_are_accepted(sql_type: str, held: str) -> None:
    check_time_key("reconcile x", "k", sql_type, held)


def test_a_datetimeoffset_7_key_declared_string_is_refused_its_text_order_not_the_instants() -> (
    None
):
    # 10:00 +05:00 is 05:00 UTC, before 06:00 +00:00, though its text sorts after it.
    with pytest.raises(ConfigError) as caught:
        check_time_key("reconcile x", "at", "datetimeoffset(7)", "string")
    message = str(caught.value)
    assert "key column at is datetimeoffset(7) declared as a STRING" in message
    assert "datetimeoffset(6)" in message


def test_a_datetime2_7_key_held_as_text_keeps_keys_100_ns_apart_apart_and_in_order() -> None:
    as_text = text_key("datetime2(7)", "string")
    parts = [sort_part(t, as_text) for t in SEVEN_DIGITS]
    assert len(set(parts)) == len(SEVEN_DIGITS)
    assert sorted(SEVEN_DIGITS, key=lambda t: sort_part(t, as_text)) == SEVEN_DIGITS
    shuffled = SEVEN_DIGITS[::2] + SEVEN_DIGITS[1::2]
    assert sorted(shuffled, key=lambda t: sort_part(t, as_text)) == SEVEN_DIGITS
    assert [typed_part(t, as_text) for t in SEVEN_DIGITS] == SEVEN_DIGITS  # never parsed


def test_a_time_key_held_as_a_spark_time_keeps_its_own_type() -> None:
    assert text_key("datetime2(7)", "timestamp_ntz") == "datetime2(7)"
    assert text_key("datetime2(6)", "string") == "datetime2(6)"


def test_a_python_time_bound_meets_seven_digit_text_keys_as_convert_writes_it() -> None:
    """An in-process emulator's bound is a Python datetime (microseconds): as a text key part
    it is CONVERT's text with a seventh digit 0, so it orders among the texts."""
    as_text = text_key("datetime2(7)", "string")
    bound = sort_part(datetime(2026, 1, 1, 12, 0, 0, 123456), as_text)
    assert bound == "2026-01-01 12:00:00.1234560"
    assert sort_part(datetime(1, 1, 1), as_text) == "0001-01-01 00:00:00.0000000"
    assert sort_part(time(9, 5, 7, 120), text_key("time(7)", "string")) == "09:05:07.0001200"
    texts = [sort_part(t, as_text) for t in SEVEN_DIGITS]
    assert sum(1 for t in texts if t < bound) == 5  # type: ignore[operator]  # the 5 before 2026
