"""Narrowing differing tiles down to keys, against a plain set comparison of the rows."""

from __future__ import annotations

import random
from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from mssql_cdc.core.row_digest import TileDigest, row_digest
from mssql_cdc.options.declared_columns import KeyBound
from mssql_cdc.reconciliation.tile_narrowing import (
    Key,
    KeyRange,
    compare_tiles,
    in_range,
    key_order,
)


class Rows:
    """A TileSide over a dict of rows, counting the questions asked of it."""

    def __init__(self, rows: dict[Key, tuple[object, ...]]) -> None:
        self.rows = rows
        self.keyed_rows = 0

    def _in(self, key_range: KeyRange) -> list[Key]:
        return sorted((k for k in self.rows if in_range(k, key_range)), key=key_order)

    def digests(self, ranges: Sequence[KeyRange]) -> list[TileDigest]:
        return [TileDigest.of(row_digest(self.rows[k]) for k in self._in(r)) for r in ranges]

    def keyed(self, key_range: KeyRange) -> dict[Key, int]:
        found = self._in(key_range)
        self.keyed_rows += len(found)
        return {k: row_digest(self.rows[k]) for k in found}

    def key_at(self, key_range: KeyRange, position: int) -> KeyBound:
        found = self._in(key_range)
        if position >= len(found):
            return None
        key = found[position]
        return key[0] if len(key) == 1 else key  # type: ignore[return-value]


def _tiles(bounds: list[int]) -> list[KeyRange]:
    edges: list[KeyBound] = [None, *bounds, None]
    return [(edges[i], edges[i + 1]) for i in range(len(edges) - 1)]


def _oracle(
    source: dict[Key, tuple[object, ...]], target: dict[Key, tuple[object, ...]]
) -> tuple[set[Key], set[Key], set[Key]]:
    missing = set(source) - set(target)
    extra = set(target) - set(source)
    different = {k for k in set(source) & set(target) if source[k] != target[k]}
    return missing, extra, different


def test_equal_sides_are_equal_and_no_key_is_read() -> None:
    rows = {(k,): (k, f"v{k}") for k in range(1000)}
    source, target = Rows(rows), Rows(dict(rows))
    found = compare_tiles(source, target, _tiles([250, 500, 750]), sample=10, leaf_rows=16)
    assert found.equal
    assert found.differing == ()
    assert (found.source_rows, found.target_rows) == (1000, 1000)
    assert source.keyed_rows == target.keyed_rows == 0


def test_a_missing_an_extra_and_a_changed_key_are_named_and_little_else_is_read() -> None:
    rows = {(k,): (k, f"v{k}") for k in range(10_000)}
    changed = dict(rows)
    del changed[(1234,)]
    changed[(20_000,)] = (20_000, "new")
    changed[(7777,)] = (7777, "edited")
    source, target = Rows(rows), Rows(changed)
    found = compare_tiles(source, target, _tiles([2500, 5000, 7500]), sample=10, leaf_rows=64)
    assert (found.missing, found.extra, found.different) == (((1234,),), ((20_000,),), ((7777,),))
    assert found.differing == (0, 3)
    assert found.complete
    assert found.found == (1, 1, 1)
    assert source.keyed_rows < 3 * 2 * 64  # three narrow leaves, never a whole tile


def test_narrowing_stops_at_the_sample() -> None:
    rows = {(k,): (k,) for k in range(2000)}
    source, target = Rows(rows), Rows({})
    found = compare_tiles(source, target, _tiles([1000]), sample=5, leaf_rows=8)
    assert len(found.missing) == 5
    assert not found.complete


def test_null_keys_sit_in_the_first_tile_and_composite_keys_compare_column_by_column() -> None:
    rows = {(a, b): (a, b, "x") for a in (None, 1, 2) for b in (None, "a", "b")}
    changed = dict(rows)
    changed[(None, None)] = (None, None, "y")
    del changed[(2, "a")]
    found = compare_tiles(
        Rows(rows), Rows(changed), [(None, (1, "a")), ((1, "a"), None)], sample=9, leaf_rows=2
    )
    assert found.different == ((None, None),)
    assert found.missing == ((2, "a"),)


@settings(derandomize=True, database=None, max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    size=st.integers(0, 400),
    edits=st.integers(0, 12),
    tiles=st.integers(1, 9),
    leaf=st.integers(1, 50),
)
def test_narrowing_finds_exactly_the_differences_a_set_comparison_finds(
    seed: int, size: int, edits: int, tiles: int, leaf: int
) -> None:
    rng = random.Random(seed)
    source = {(k,): (k, rng.randrange(5)) for k in rng.sample(range(1000), size)}
    target = dict(source)
    for _ in range(edits):
        k = rng.randrange(1000)
        action = rng.choice(["delete", "put"])
        if action == "delete":
            target.pop((k,), None)
        else:
            target[(k,)] = (k, rng.randrange(5))
    bounds = sorted(rng.sample(range(1000), tiles - 1))
    found = compare_tiles(Rows(source), Rows(target), _tiles(bounds), sample=10_000, leaf_rows=leaf)
    missing, extra, different = _oracle(source, target)
    assert set(found.missing) == missing
    assert set(found.extra) == extra
    assert set(found.different) == different
    assert found.equal == (not missing and not extra and not different)
