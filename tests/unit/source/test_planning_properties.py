"""The planner's pure steps together: cut at S, skip purged pieces, split into ranges.

Whatever the tiles, the cut and the cleanup, ranges are ascending, never empty or inverted,
never straddle S, and cover exactly what is left of the batch after the skips.
"""

from __future__ import annotations

from datetime import datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from mssql_cdc.core.lsn import Lsn
from mssql_cdc.core.offsets import StreamOffset
from mssql_cdc.core.ranges import Piece, Tile, batch_ranges
from mssql_cdc.source import loss_guards as guards
from mssql_cdc.sqlserver.instances import pieces
from mssql_cdc.sqlserver.metadata import CaptureInstance


def L(n: int) -> Lsn:
    return Lsn(f"0x{n:020X}")


class Tiles:
    def __init__(self, commits: dict[int, int]) -> None:
        self.commits = commits

    def split_points(self, capture_instance: str, from_lsn: Lsn, to_lsn: Lsn, n: int) -> list[Tile]:
        rows = sorted(
            c
            for c, k in self.commits.items()
            if int(from_lsn, 16) <= c <= int(to_lsn, 16)
            for _ in range(k)
        )
        size = -(-len(rows) // n) if rows else 0
        return (
            [
                Tile(L(max(rows[i : i + size])), len(rows[i : i + size]))
                for i in range(0, len(rows), size)
            ]
            if rows
            else []
        )


@settings(derandomize=True, database=None, max_examples=400)
@given(
    start=st.integers(min_value=0, max_value=40),
    width=st.integers(min_value=1, max_value=40),
    switch=st.none() | st.integers(min_value=1, max_value=90),
    min_old=st.none() | st.integers(min_value=0, max_value=90),
    min_new=st.none() | st.integers(min_value=0, max_value=90),
    commits=st.dictionaries(
        st.integers(min_value=1, max_value=90), st.integers(min_value=1, max_value=5), max_size=25
    ),
    n=st.integers(min_value=1, max_value=4),
)
def test_ranges_cover_exactly_what_the_skips_leave_and_never_straddle_s(
    start: int,
    width: int,
    switch: int | None,
    min_old: int | None,
    min_new: int | None,
    commits: dict[int, int],
    n: int,
) -> None:
    end = start + width
    old = CaptureInstance("v1", "dbo", "t", L(1), datetime(2026, 1, 1), ("id",), ())
    instances = [old]
    if switch is not None:
        instances.append(
            CaptureInstance("v2", "dbo", "t", L(switch), datetime(2026, 1, 2), ("id",), ())
        )
    min_lsn = {
        "v1": None if min_old is None else L(min_old),
        "v2": None if min_new is None else L(min_new),
    }

    kept: list[Piece] = []
    for piece in pieces(L(start + 1), L(end), instances):
        skip = guards.skip_piece(piece, min_lsn[piece.capture_instance])
        if skip is None:
            kept.append(piece)
        elif skip.piece is not None:
            kept.append(skip.piece)

    ranges = batch_ranges(
        Tiles(commits),
        kept,
        start=StreamOffset(L(start), None),
        end=StreamOffset(L(end), None),
        num_partitions=n,
        time_zone="UTC",
        null_columns={},
        min_rows=1,
    )
    covered = [x for r in ranges for x in range(int(r.from_lsn, 16), int(r.to_lsn, 16) + 1)]
    expected = [x for p in kept for x in range(int(p.from_lsn, 16), int(p.to_lsn, 16) + 1)]
    assert covered == expected  # exact cover, ascending, no overlap
    for r in ranges:
        assert r.from_lsn <= r.to_lsn
        if switch is not None:
            assert (r.to_lsn < L(switch)) == (r.capture_instance == "v1")
            assert (r.from_lsn >= L(switch)) == (r.capture_instance == "v2")
        established = min_lsn[r.capture_instance] not in (None, L(0))
        if established:
            assert r.from_lsn >= min_lsn[r.capture_instance]  # nothing purged is read
    assert sum(r.last for r in ranges) == (1 if ranges and ranges[-1].to_lsn == L(end) else 0)
