"""Chunk plans over a table held as a plain sorted list of keys (spec 30 section 3.3)."""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mssql_cdc.core.recovery_decision import Observation
from mssql_cdc.facts.detail_payloads import IntExtent
from mssql_cdc.options.declared_columns import KeyBound
from mssql_cdc.snapshot.chunk_plan import int_chunks, keyset_chunks
from mssql_cdc.snapshot.probe import ResolvedSource


class ListProbe:
    """A table of unique keys; counts are exact, as a server's GROUP BY is."""

    def __init__(self, keys: Sequence[int]) -> None:
        self.keys = sorted(keys)
        self.bucket_calls = 0

    def resolved(self) -> ResolvedSource:
        return ResolvedSource("dbo_t", "dbo", "t", None, ("id",))

    def observe(self) -> Observation:
        return Observation(None)

    def commit_ts(self, at: str) -> str | None:
        return None

    def column_types(self) -> dict[str, str]:
        return {"id": "bigint"}

    def int_extent(self, key: str) -> tuple[int, int] | None:
        return (self.keys[0], self.keys[-1]) if self.keys else None

    def row_count(self) -> int | None:
        return len(self.keys)

    def _count(self, a: int, b: int) -> int:
        return bisect.bisect_left(self.keys, b) - bisect.bisect_left(self.keys, a)

    def buckets(self, key: str, n: int, lo: int, hi: int) -> list[tuple[int, int, int]]:
        self.bucket_calls += 1
        width, extra = divmod(hi - lo, n)
        out, a = [], lo
        for j in range(n):
            b = a + width + (1 if j < extra else 0)
            out.append((a, b, self._count(a, b)))
            a = b
        return out

    def keyset_max(self, keys: Sequence[str]) -> KeyBound:
        return self.keys[-1] if self.keys else None

    def keyset_bounds(self, keys: Sequence[str], every: int, upto: KeyBound) -> list[KeyBound]:
        return [k for k in self.keys[every::every] if upto is not None and k <= upto]  # type: ignore[operator]

    def first_key_above(self, keys: Sequence[str], bound: KeyBound) -> KeyBound:
        i = bisect.bisect_right(self.keys, bound)
        return self.keys[i] if i < len(self.keys) else None

    def close(self) -> None:
        pass


def _extent(probe: ListProbe) -> IntExtent:
    lo, hi = probe.int_extent("id") or (None, None)
    return {"kind": "int", "lo": lo, "hi": hi, "rows": len(probe.keys) or None}


def _owner(chunks: list[list[object]], key: int) -> list[int]:
    return [
        i
        for i, (lo, hi) in enumerate(chunks)
        if (lo is None or lo <= key) and (hi is None or key < hi)  # type: ignore[operator]
    ]


@settings(derandomize=True, database=None, max_examples=60)
@given(
    keys=st.sets(st.integers(min_value=-(2**63), max_value=2**63 - 2), max_size=60),
    chunk_rows=st.integers(min_value=1, max_value=25),
)
def test_integer_chunks_hold_every_key_once_and_never_more_than_chunk_rows(
    keys: set[int], chunk_rows: int
) -> None:
    probe = ListProbe(sorted(keys))
    chunks = int_chunks(probe, "id", _extent(probe), chunk_rows, "bigint")
    assert chunks[0][0] is None
    for previous, following in itertools.pairwise(chunks):
        assert previous[1] == following[0]
    for key in keys:
        assert len(_owner(chunks, key)) == 1
    for lo, hi in chunks:
        inside = [k for k in keys if (lo is None or lo <= k) and (hi is None or k < hi)]
        assert len(inside) <= chunk_rows
    if keys:
        assert chunks[-1][1] == max(keys) + 1


def test_the_last_integer_chunk_is_open_above_at_the_types_maximum() -> None:
    probe = ListProbe([1, 2, 2**31 - 1])
    chunks = int_chunks(probe, "id", _extent(probe), 2, "int")
    assert chunks[-1][1] is None


def test_an_empty_table_is_one_open_chunk() -> None:
    probe = ListProbe([])
    assert int_chunks(probe, "id", _extent(probe), 10, "bigint") == [[None, None]]
    assert keyset_chunks(probe, ["id"], None, 10) == [[None, None]]


def test_a_dense_range_is_packed_greedily_by_its_counted_slices() -> None:
    probe = ListProbe(list(range(1000)))
    chunks = int_chunks(probe, "id", _extent(probe), 100, "bigint")
    # 160 slices of 6 or 7 keys: a chunk closes only when the next slice would not fit.
    sizes = [
        len([k for k in probe.keys if (lo is None or lo <= k) and k < hi]) for lo, hi in chunks
    ]  # type: ignore[operator]
    assert all(94 <= size <= 100 for size in sizes[:-1])
    assert sum(sizes) == 1000
    assert chunks[-1][1] == 1000


def test_keyset_chunks_end_at_the_first_key_above_max() -> None:
    probe = ListProbe([1, 3, 5, 7, 9, 11])
    chunks = keyset_chunks(probe, ["id"], 7, 2)
    assert chunks == [[None, 5], [5, 9]]


@pytest.mark.parametrize("maximum", [11])
def test_keyset_chunks_are_open_above_without_a_key_above_max(maximum: int) -> None:
    probe = ListProbe([1, 3, 5, 7, 9, 11])
    assert keyset_chunks(probe, ["id"], maximum, 4) == [[None, 9], [9, None]]
