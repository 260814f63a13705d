"""LSN text and arithmetic, checked against Python's own integers as the oracle."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mssql_cdc.core import lsn
from mssql_cdc.errors import ConfigError

MAX = 2**80 - 1
values = st.integers(min_value=0, max_value=MAX)


@settings(derandomize=True, database=None, max_examples=500)
@given(n=values, upper=st.booleans(), prefix=st.booleans())
def test_any_spelling_parses_to_the_canonical_text(n: int, upper: bool, prefix: bool) -> None:
    digits = f"{n:X}" if upper else f"{n:x}"
    text = "0x" + digits if prefix else f"{n:020x}"
    assert lsn.normalize(text) == f"0x{n:020X}"


@settings(derandomize=True, database=None, max_examples=500)
@given(n=st.integers(min_value=0, max_value=MAX - 1))
def test_increment_agrees_with_integer_addition(n: int) -> None:
    assert lsn.increment(f"0x{n:X}") == f"0x{n + 1:020X}"


@settings(derandomize=True, database=None, max_examples=500)
@given(n=st.integers(min_value=1, max_value=MAX))
def test_decrement_agrees_with_integer_subtraction(n: int) -> None:
    assert lsn.decrement(f"0x{n:X}") == f"0x{n - 1:020X}"


@settings(derandomize=True, database=None, max_examples=300)
@given(a=values, b=values)
def test_compare_and_text_order_agree_with_integer_order(a: int, b: int) -> None:
    expected = (a > b) - (a < b)
    assert lsn.compare(f"0x{a:x}", f"0x{b:x}") == expected
    ta, tb = lsn.normalize(f"0x{a:x}"), lsn.normalize(f"0x{b:x}")
    assert (ta > tb) - (ta < tb) == expected


@settings(derandomize=True, database=None, max_examples=300)
@given(n=values)
def test_fields_split_the_value_into_vlf_block_and_slot(n: int) -> None:
    vlf, block, slot = lsn.fields(f"0x{n:X}")
    assert (vlf << 48) | (block << 16) | slot == n
    assert lsn.from_fields(vlf, block, slot) == f"0x{n:020X}"


def test_the_zero_lsn_is_twenty_zero_digits() -> None:
    assert lsn.ZERO == "0x" + "0" * 20


def test_increment_past_the_maximum_and_decrement_below_zero_raise_overflow() -> None:
    with pytest.raises(OverflowError, match="maximum"):
        lsn.increment(f"0x{MAX:X}")
    with pytest.raises(OverflowError, match="zero"):
        lsn.decrement(lsn.ZERO)


@pytest.mark.parametrize(
    "bad", ["", "0x", "0xG1", "12345", "0x" + "1" * 21, "0x 1", "lsn"], ids=repr
)
def test_malformed_text_is_a_value_error_quoting_it(bad: str) -> None:
    with pytest.raises(ValueError, match=f"'{bad}' is not an LSN") as raised:
        lsn.normalize(bad)
    assert isinstance(raised.value, ConfigError)
