"""Cutting a batch into ranges: contiguous, commit-aligned, balanced, never empty or inverted."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mssql_cdc.core.lsn import Lsn
from mssql_cdc.core.offsets import StreamOffset
from mssql_cdc.core.ranges import Piece, Tile, batch_ranges, cut_at_switch, split_piece


def L(n: int) -> Lsn:
    return Lsn(f"0x{n:020X}")


def n_of(text: str) -> int:
    return int(text, 16)


class NtileSource:
    """A fake backend: commits as (lsn, rows), tiled the way SQL Server's NTILE deals rows."""

    def __init__(self, commits: Sequence[tuple[int, int]]) -> None:
        self.commits = commits
        self.calls: list[tuple[str, str, str, int]] = []

    def split_points(self, capture_instance: str, from_lsn: Lsn, to_lsn: Lsn, n: int) -> list[Tile]:
        self.calls.append((capture_instance, from_lsn, to_lsn, n))
        rows = [c for c, k in self.commits if n_of(from_lsn) <= c <= n_of(to_lsn) for _ in range(k)]
        if not rows:
            return []
        size, extra = divmod(len(rows), n)
        tiles, i = [], 0
        for t in range(min(n, len(rows))):
            take = size + (1 if t < extra else 0)
            chunk = rows[i : i + take]
            i += take
            tiles.append(Tile(L(max(chunk)), len(chunk)))
        return tiles


tile_lists = st.lists(
    st.tuples(st.integers(min_value=0, max_value=60), st.integers(min_value=1, max_value=9)),
    max_size=12,
)


@settings(derandomize=True, database=None, max_examples=400)
@given(
    first=st.integers(min_value=1, max_value=40),
    width=st.integers(min_value=0, max_value=40),
    raw=tile_lists,
    min_rows=st.integers(min_value=1, max_value=15),
)
def test_ranges_cover_the_piece_exactly_and_are_commit_aligned(
    first: int, width: int, raw: list[tuple[int, int]], min_rows: int
) -> None:
    last = first + width
    ends = sorted(first + (offset % (width + 1)) for offset, _ in raw)
    tiles = [Tile(L(e), rows) for e, (_, rows) in zip(ends, raw, strict=True)]
    ranges = split_piece(L(first), L(last), tiles, min_rows=min_rows)

    bounds = [(n_of(a), n_of(b)) for a, b in ranges]
    assert bounds[0][0] == first
    assert bounds[-1][1] == last
    for (_, b), (c, _) in itertools.pairwise(bounds):
        assert c == b + 1  # contiguous and ascending
    assert all(a <= b for a, b in bounds)  # never empty, never inverted
    assert {b for _, b in bounds[:-1]} <= set(ends)  # cut only after a whole commit
    assert len(ranges) <= max(1, len(tiles))
    rows = [sum(t.rows for t in tiles if a <= n_of(t.last_lsn) <= b) for a, b in bounds]
    if len(set(ends)) == len(ends):
        # Every range but the last is a closed group. (A commit spread over two tiles moves
        # rows into the range before, to stay whole, so then only "about equal" holds.)
        assert all(r >= min_rows for r in rows[:-1])
    if sum(t.rows for t in tiles) < 2 * min_rows:
        assert len(ranges) == 1


def test_a_piece_without_change_rows_is_one_range() -> None:
    assert split_piece(L(5), L(9), [], min_rows=1) == [(L(5), L(9))]
    assert split_piece(L(5), L(5), [], min_rows=1) == [(L(5), L(5))]


def test_partitions_balance_rows_not_commits() -> None:
    source = NtileSource([(i, 1) for i in range(1, 9)] + [(9, 8)])
    ranges = batch_ranges(
        source,
        [Piece("dbo_orders", L(1), L(9))],
        start=StreamOffset(L(0), None),
        end=StreamOffset(L(9), None),
        num_partitions=2,
        time_zone="UTC",
        null_columns={},
        min_rows=1,
    )
    rows = [
        sum(k for c, k in source.commits if n_of(r.from_lsn) <= c <= n_of(r.to_lsn)) for r in ranges
    ]
    assert rows == [8, 8]


def test_a_commit_spread_over_two_tiles_stays_whole_in_the_first_range() -> None:
    tiles = [Tile(L(3), 5), Tile(L(3), 5), Tile(L(7), 5)]
    assert split_piece(L(1), L(8), tiles, min_rows=1) == [(L(1), L(3)), (L(4), L(8))]


def test_a_short_last_group_joins_the_one_before() -> None:
    tiles = [Tile(L(2), 10), Tile(L(4), 10), Tile(L(6), 3)]
    assert split_piece(L(1), L(9), tiles, min_rows=10) == [(L(1), L(2)), (L(3), L(9))]


def test_split_piece_refuses_an_inverted_piece_and_a_zero_minimum() -> None:
    with pytest.raises(ValueError, match="is above to"):
        split_piece(L(9), L(1), [], min_rows=1)
    with pytest.raises(ValueError, match="min_rows=0 must be at least 1"):
        split_piece(L(1), L(9), [], min_rows=0)


@settings(derandomize=True, database=None, max_examples=300)
@given(
    first=st.integers(min_value=1, max_value=50),
    width=st.integers(min_value=0, max_value=50),
    switch=st.integers(min_value=1, max_value=120),
)
def test_the_cut_at_s_never_straddles_it_and_covers_the_interval(
    first: int, width: int, switch: int
) -> None:
    last = first + width
    pieces = cut_at_switch(L(first), L(last), "v1", "v2", L(switch))
    covered = [n for p in pieces for n in range(n_of(p.from_lsn), n_of(p.to_lsn) + 1)]
    assert covered == list(range(first, last + 1))
    for piece in pieces:
        assert piece.from_lsn <= piece.to_lsn
        if piece.capture_instance == "v1":
            assert n_of(piece.to_lsn) < switch
        else:
            assert n_of(piece.from_lsn) >= switch


def test_one_instance_serves_the_whole_interval() -> None:
    assert cut_at_switch(L(1), L(9), "v1", None, None) == [Piece("v1", L(1), L(9))]
    assert cut_at_switch(L(9), L(1), "v1", None, None) == []


def test_batch_ranges_flag_the_last_range_and_carry_the_batch_offsets() -> None:
    source = NtileSource([(2, 3), (4, 3), (7, 3), (8, 3)])
    start, end = StreamOffset(L(1), "2026-09-28T14:00:00.000"), StreamOffset(L(9), None)
    pieces = cut_at_switch(L(2), L(9), "v1", "v2", L(6))
    ranges = batch_ranges(
        source,
        pieces,
        start=start,
        end=end,
        num_partitions=2,
        time_zone="UTC",
        null_columns={"v2": ("note",)},
        min_rows=1,
    )
    assert [(r.capture_instance, n_of(r.from_lsn), n_of(r.to_lsn)) for r in ranges] == [
        ("v1", 2, 2),
        ("v1", 3, 5),
        ("v2", 6, 7),
        ("v2", 8, 9),
    ]
    assert [r.last for r in ranges] == [False, False, False, True]
    assert {r.start_ts for r in ranges} == {"2026-09-28T14:00:00.000"}
    assert [r.null_columns for r in ranges] == [(), (), ("note",), ("note",)]
    assert {(r.batch_start_lsn, r.batch_end_lsn) for r in ranges} == {(L(1), L(9))}
    assert [c[3] for c in source.calls] == [2, 2]
