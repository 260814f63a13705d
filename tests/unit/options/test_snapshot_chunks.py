"""snapshotChunks: a list is accepted only when its ranges are ordered, disjoint and non-empty."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mssql_cdc.errors import ConfigError
from mssql_cdc.options.config import SourceConfig
from mssql_cdc.options.declared_columns import SnapshotChunk, check_chunk_order

BASE = {"captureInstance": "dbo_orders", "backend": "pymssql", "connectionString": "Server=h"}


def chunks(text: str) -> tuple[SnapshotChunk, ...] | None:
    return SourceConfig.from_options({**BASE, "snapshotChunks": text}).snapshot_chunks


def key_sets(entries: list[tuple[int | None, int | None]]) -> list[set[int]]:
    """The oracle: each chunk as the set of integer keys it reads in a domain past every bound."""
    return [set(range(-1 if lo is None else lo, 12 if hi is None else hi)) for lo, hi in entries]


def oracle_accepts(entries: list[tuple[int | None, int | None]]) -> bool:
    sets = key_sets(entries)
    if any(not s for s in sets):
        return False
    if sum(lo is None for lo, _ in entries) > 1 or sum(hi is None for _, hi in entries) > 1:
        return False
    disjoint = all(not (a & b) for i, a in enumerate(sets) for b in sets[i + 1 :])
    ordered = all(min(a) < min(b) for a, b in itertools.pairwise(sets))
    return disjoint and ordered


bound = st.one_of(st.none(), st.integers(min_value=0, max_value=10))


@settings(derandomize=True, database=None, max_examples=400)
@given(entries=st.lists(st.tuples(bound, bound), min_size=1, max_size=5))
def test_integer_chunk_lists_are_accepted_exactly_when_the_ranges_are_ordered_and_disjoint(
    entries: list[tuple[int | None, int | None]],
) -> None:
    text = json.dumps([[i, lo, hi] for i, (lo, hi) in enumerate(entries)])
    if oracle_accepts(entries):
        assert chunks(text) == tuple(SnapshotChunk(i, lo, hi) for i, (lo, hi) in enumerate(entries))
    else:
        with pytest.raises(ConfigError, match="option snapshotChunks: entry"):
            chunks(text)


BAD = [
    ("[[0, 5, 1]]", "entry 0: lo 5 is not below hi 1"),
    ("[[0, 5, 5]]", "entry 0: lo 5 is not below hi 5"),
    ("[[0, null, 10], [1, 5, null]]", "entry 1 [5, null) starts below the hi 10 of entry 0"),
    ("[[0, 5, 10], [1, 0, 5]]", "the chunks overlap or are out of order"),
    ("[[0, null, 5], [1, null, 9]]", "entry 1 is open below (lo null), so it must be listed first"),
    ("[[0, 1, null], [1, 2, null]]", "entry 0 is open above (hi null), so it must be listed last"),
    ("[[0, null, null], [1, null, null]]", "entry 0 is open above"),
    ('[[0, "a", "c"], [1, "a", "c"]]', 'entry 1 has the lo "a" of entry 0, so the two overlap'),
    ('[[0, "a", "c"], [1, "c", "d"], [2, "a", "b"]]', 'entry 2 has the lo "a" of entry 0'),
    ('[[0, "a", "c"], [1, "b", "c"]]', 'entry 1 has the hi "c" of entry 0'),
    ('[[0, [1, "x"], [1, "x"]]]', 'entry 0: lo [1, "x"] is not below hi [1, "x"]'),
    # = ignores trailing spaces in every collation: "a" and "a  " are one key
    # (https://learn.microsoft.com/en-us/troubleshoot/sql/database-design/sql-server-trailing-spaces)
    ('[[0, "a", "a  "]]', 'entry 0: lo "a" is not below hi "a  "'),
    ('[[0, "a", "c"], [1, "a ", "d"]]', 'entry 1 has the lo "a " of entry 0'),
    ('[[0, [2, "a"], [3, "a"]], [1, [1, "z"], [2, "a"]]]', "overlap or are out of order"),
    ('[[0, null, 5], [1, 5, "x"]]', "key part 0 is a number in entry 0 and a string in entry 1"),
    ('[[0, [1, "a"], [1, 2]]]', "key part 1 is a string in entry 0 and a number in entry 0"),
    ("[[0, NaN, 5]]", "entry 0: lo must be a finite number (got nan)"),
    ("[[0, 1, Infinity]]", "entry 0: hi must be a finite number (got inf)"),
    ("[[2147483648, null, null]]", "chunk 2147483648 is above 2147483647"),
    ("[[0, [[1]], 5]]", "option snapshotChunks nests lists deeper than 3 level(s)"),
    ("[" * 100_000, "option snapshotChunks nests lists deeper than 3 level(s)"),
    ("[[0, null, " + "9" * 5000 + "]]", "option snapshotChunks must be a JSON list of"),
]


@pytest.mark.parametrize(("text", "message"), BAD, ids=[b[1][:60] for b in BAD])
def test_a_chunk_list_that_cannot_be_read_as_given_is_refused(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        chunks(text)
    assert message in str(caught.value)


GOOD = [
    '[[0, null, "q"], [1, "q", "s"], [2, "s", null]]',
    '[[0, "a", "B"], [1, "b", "c"]]',  # ordered in a case-insensitive collation, not by Python
    '[[0, null, [1, null]], [1, [1, null], [1, "x"]], [2, [1, "x"], [2, null]]]',
    "[[7, 1.5, 2], [3, 2, 2.5], [0, 3, null]]",
    '[[0, "[[[[", "]]]]"]]',  # brackets inside strings do not nest
]


@pytest.mark.parametrize("text", GOOD)
def test_ordered_disjoint_chunk_lists_are_accepted(text: str) -> None:
    parsed = chunks(text)
    assert parsed is not None
    assert [[c.chunk, c.lo, c.hi] for c in parsed] == [
        [n, tuple(lo) if isinstance(lo, list) else lo, tuple(hi) if isinstance(hi, list) else hi]
        for n, lo, hi in json.loads(text)
    ]


def test_a_deeply_nested_key_list_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="option snapshotKeys nests lists deeper than 1"):
        SourceConfig.from_options({**BASE, "snapshotKeys": "[" * 100_000})


# Under the key column's collation (decision 1332; the documented rules:
# https://learn.microsoft.com/en-us/sql/relational-databases/collations/collation-and-unicode-support):
# case-insensitive 'a' = 'A'; case-sensitive 'a' < 'A' < 'b'; BIN2 by code point, 'B' < 'a'.
CI = "nvarchar COLLATE SQL_Latin1_General_CP1_CI_AS"
CS = "nvarchar COLLATE Latin1_General_CS_AS"
BIN2 = "nvarchar COLLATE Latin1_General_BIN2"
UNDER = [
    ('[[0, "a", "A"]]', CI, 'entry 0: lo "a" is not below hi "A" under k'),
    ('[[0, null, "b"], [1, "A", null]]', CI, 'entry 1 starts at "A", below the hi "b"'),
    ('[[0, null, "b"], [1, "A", null]]', CS, 'entry 1 starts at "A", below the hi "b"'),
    ('[[0, "A", "a"]]', CS, 'entry 0: lo "A" is not below hi "a"'),
    ('[[0, "a", "B"]]', BIN2, 'entry 0: lo "a" is not below hi "B"'),
]


@pytest.mark.parametrize(("text", "sql_type", "message"), UNDER)
def test_chunks_out_of_order_under_the_key_columns_collation_are_refused_by_the_source(
    text: str, sql_type: str, message: str
) -> None:
    parsed = chunks(text)  # Python alone cannot order two different strings
    assert parsed is not None
    with pytest.raises(ConfigError) as caught:
        check_chunk_order(parsed, ["k"], [sql_type])
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("text", "sql_type"),
    [
        ('[[0, "a", "B"], [1, "b", "c"]]', CI),
        ('[[0, null, "a"], [1, "A", "b"], [2, "B", null]]', CS),
        ('[[0, "B", "a"], [1, "b", null]]', BIN2),
        ('[[0, "a-", "a_"]]', CI),  # punctuation: only the server orders it, so it decides
        ("[[0, 5, 6]]", "int"),
    ],
)
def test_chunks_in_the_key_columns_collation_order_are_accepted(text: str, sql_type: str) -> None:
    parsed = chunks(text)
    assert parsed is not None
    check_chunk_order(parsed, ["k"], [sql_type])
