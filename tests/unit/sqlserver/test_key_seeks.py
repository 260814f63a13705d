"""An integer key's extent found by one-row seeks (decision 1412), against Python's own min and
max of the keys. The types' limits are Microsoft's
(https://learn.microsoft.com/en-us/sql/t-sql/data-types/int-bigint-smallint-and-tinyint-transact-sql).
"""

from __future__ import annotations

from bisect import bisect_left

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mssql_cdc.sqlserver.key_seeks import INTEGER_RANGES, extent_by_seeks


def seeker(keys: list[int]) -> tuple[list[int], object]:
    """The seeks made, and a seek over `keys`: the smallest key at or above a value."""
    ordered, made = sorted(set(keys)), []

    def first_at_or_above(value: int) -> int | None:
        made.append(value)
        at = bisect_left(ordered, value)
        return ordered[at] if at < len(ordered) else None

    return made, first_at_or_above


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(sorted(INTEGER_RANGES)).flatmap(
        lambda t: st.tuples(
            st.just(t), st.lists(st.integers(*INTEGER_RANGES[t]), min_size=1, max_size=50)
        )
    )
)
def test_the_extent_is_the_lowest_and_highest_key_in_at_most_65_seeks(
    case: tuple[str, list[int]],
) -> None:
    sql_type, keys = case
    made, first_at_or_above = seeker(keys)
    assert extent_by_seeks(first_at_or_above, sql_type) == (min(keys), max(keys))  # type: ignore[arg-type]
    assert len(made) <= 65  # one for the lowest, at most 64 halvings of a bigint's range


def test_keys_at_the_types_limits_and_an_empty_table() -> None:
    low, high = INTEGER_RANGES["bigint"]
    _, first_at_or_above = seeker([low, high])
    assert extent_by_seeks(first_at_or_above, "bigint") == (low, high)  # type: ignore[arg-type]
    _, nothing = seeker([])
    assert extent_by_seeks(nothing, "int") is None  # type: ignore[arg-type]
    assert INTEGER_RANGES["tinyint"] == (0, 255)
    assert INTEGER_RANGES["int"] == (-2147483648, 2147483647)


def test_a_seek_answered_below_its_value_is_refused_rather_than_looping() -> None:
    with pytest.raises(ValueError, match="a seek for a key >="):
        extent_by_seeks(lambda value: 5, "int")
