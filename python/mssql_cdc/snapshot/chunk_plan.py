"""The key extent of a chunked snapshot's open and its plan.

docs/snapshots.md, 'Chunked snapshots', describes both.

Integer keys are packed by counted slices; other keys are cut by keyset bounds at every
`chunk_rows`-th key up to the MAX read after S. The chunks tile the key space: the first is open
below (NULL keys included), each next starts where the previous ends, and the last ends just
above MAX. Python integers are exact, so keys at the bigint limits need no care.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from mssql_cdc.facts import IntExtent, KeysetExtent, json_key
from mssql_cdc.snapshot.probe import SourceProbe

__all__ = [
    "DEFAULT_CHUNK_ROWS",
    "INTEGER_MAX",
    "Extent",
    "chunk_ranges",
    "int_chunks",
    "key_extent",
    "keyset_chunks",
    "usable_keys",
]

DEFAULT_CHUNK_ROWS = 1_000_000
MAX_SLICES = 100_000
INTEGER_MAX = {"tinyint": 255, "smallint": 2**15 - 1, "int": 2**31 - 1, "bigint": 2**63 - 1}
# Types without a lossless text form cannot travel as chunk bounds.
_NO_TEXT_FORM = frozenset(
    {"sql_variant", "xml", "text", "ntext", "image", "geometry", "geography", "hierarchyid"}
)

Extent = IntExtent | KeysetExtent | None
Chunk = list[object]  # [lo, hi]: lo inclusive, hi exclusive, None for an open end


def _base(sql_type: str) -> str:
    return sql_type.split("(", 1)[0].strip().lower()


def usable_keys(probe: SourceProbe) -> tuple[list[str], Literal["int", "keyset"] | None]:
    """The snapshot keys and their plan kind; kind None when no key can bound a chunk."""
    keys = list(probe.resolved().index_columns)
    if not keys:
        return keys, None
    types = {name.lower(): _base(t) for name, t in probe.column_types().items()}
    found = [types.get(k.lower(), "") for k in keys]
    if any(t in _NO_TEXT_FORM or t == "" or "max" in t for t in found):
        return keys, None
    if len(keys) == 1 and found[0] in INTEGER_MAX:
        return keys, "int"
    return keys, "keyset"


def key_extent(probe: SourceProbe) -> tuple[list[str], Extent]:
    """The open's `keys` and `plan`: MIN, MAX and row count of an integer key, MAX otherwise."""
    keys, kind = usable_keys(probe)
    if kind is None:
        return keys, None
    if kind == "int":
        found = probe.int_extent(keys[0])
        if found is None:
            return keys, {"kind": "int", "lo": None, "hi": None, "rows": None}
        rows = max(probe.row_count() or 1, 1)
        return keys, {"kind": "int", "lo": found[0], "hi": found[1], "rows": rows}
    return keys, {"kind": "keyset", "max": json_key(probe.keyset_max(keys))}


def _clamp(value: int, low: int, high: int) -> int:
    return max(low, min(high, value))


def _counted_slices(
    probe: SourceProbe, key: str, lo: int, hi: int, count: int, chunk_rows: int, minimum: int
) -> list[tuple[int, int, int]]:
    """`[lo, hi)` cut into counted slices none of which holds more than `chunk_rows` rows."""
    n = _clamp(math.ceil(16 * count / chunk_rows), minimum, MAX_SLICES)
    n = min(n, hi - lo)  # a slice is at least one key wide
    out: list[tuple[int, int, int]] = []
    for a, b, rows in probe.buckets(key, n, lo, hi):
        if rows > chunk_rows and b - a > 1:
            out.extend(_counted_slices(probe, key, a, b, rows, chunk_rows, 2))
        else:
            out.append((int(a), int(b), int(rows)))
    return out


def int_chunks(
    probe: SourceProbe, key: str, extent: IntExtent, chunk_rows: int, key_type: str
) -> list[Chunk]:
    """Chunks of an integer key: counted slices packed in key order while they fit."""
    lo, hi = extent["lo"], extent["hi"]
    if lo is None or hi is None:
        return [[None, None]]
    slices = _counted_slices(probe, key, lo, hi + 1, extent["rows"] or 1, chunk_rows, 1)
    starts: list[int] = []
    filled = 0
    for a, _, rows in slices:
        if starts and filled + rows <= chunk_rows:
            filled += rows
        else:
            starts.append(a)
            filled = rows
    top = None if hi >= INTEGER_MAX.get(key_type, 2**63 - 1) else hi + 1
    ends: list[int | None] = [*starts[1:], top]
    chunks: list[Chunk] = [[s, e] for s, e in zip(starts, ends, strict=True)]
    chunks[0][0] = None  # open below: NULL keys and keys below MIN written after S
    return chunks


def keyset_chunks(
    probe: SourceProbe, keys: Sequence[str], maximum: object, chunk_rows: int
) -> list[Chunk]:
    """Chunks of any other key: `[null, b1)`, ..., `[bk, after)` with bounds at or below MAX."""
    if maximum is None:
        return [[None, None]]
    upto = tuple(maximum) if isinstance(maximum, list) else maximum
    bounds = [json_key(b) for b in probe.keyset_bounds(keys, chunk_rows, upto)]  # type: ignore[arg-type]
    after = json_key(probe.first_key_above(keys, upto))  # type: ignore[arg-type]
    edges: list[object] = [None, *bounds, after]
    return [[edges[i], edges[i + 1]] for i in range(len(edges) - 1)]


def chunk_ranges(chunks: Sequence[Sequence[object]]) -> list[tuple[int, object, object]]:
    """The plan's chunks numbered as the reader takes them: `(chunk, lo, hi)`."""
    return [(i, c[0], c[1]) for i, c in enumerate(chunks)]
