"""Compare two sides tile by tile, and narrow only the tiles that differ down to keys.

Both sides answer the same questions about a key range `[lo, hi)` (None an open end; the first
range, open below, holds the NULL keys): its row count and digest, and, once a range is small,
the digest of each of its keys. A range whose counts and digests agree holds the same rows on
both sides (up to a 64-bit digest's collisions); one that differs is split at the middle key of
its larger side and both halves are asked again, until a range has at most `leaf_rows` rows on
each side and its keys are compared one by one. Narrowing stops once `sample` keys are named.

Keys are compared in SQL Server's order for their SQL types (`key_types`, one per key column;
`core.sort_part`): a GUID by its byte groups, a datetimeoffset as its UTC instant, a date or
time bound given as server text as the date or time it names (decision 1331), a character key
by its collation, so that spellings one key under it are one key here too (decision 1332).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol

from mssql_cdc.core import TileDigest, sort_part, typed_part
from mssql_cdc.options import KeyBound

__all__ = [
    "KeyRange",
    "KeyTypes",
    "Narrowed",
    "TileSide",
    "as_key",
    "compare_tiles",
    "in_range",
    "key_order",
    "typed_key",
]

Key = tuple[object, ...]
KeyRange = tuple[KeyBound, KeyBound]
KeyTypes = Sequence[str | None]
"""The SQL type of each key column (None: unknown, compared as the value is); () for all."""


class TileSide(Protocol):
    """One side of a reconcile: digests of key ranges, keys of a small one, a middle key."""

    def digests(self, ranges: Sequence[KeyRange]) -> list[TileDigest]: ...
    def keyed(self, key_range: KeyRange) -> dict[Key, int]: ...
    def key_at(self, key_range: KeyRange, position: int) -> KeyBound: ...


def as_key(bound: object) -> Key:
    """A key as a tuple, whether it came as a scalar (one key column) or a tuple."""
    return tuple(bound) if isinstance(bound, tuple | list) else (bound,)


def typed_key(key: Key, types: KeyTypes = ()) -> Key:
    """A key with each part the Python value of its SQL type, so that a key read from the
    server, the emulator or Spark is one value (a GUID's text upper case, a datetimeoffset an
    aware UTC time)."""
    if not types:
        return key
    return tuple(typed_part(v, t) for v, t in zip(key, types, strict=True))


def _sortable(key: Key, types: KeyTypes) -> Key:
    if not types:
        return key
    return tuple(sort_part(v, t) for v, t in zip(key, types, strict=True))


def _key_below(a: Key, b: Key, types: KeyTypes = ()) -> bool:
    """a < b in key order with NULLs first, as SQL Server orders keys of these types."""
    for x, y in zip(_sortable(a, types), _sortable(b, types), strict=True):
        if x == y:
            continue
        if x is None:
            return True
        if y is None:
            return False
        return bool(x < y)  # type: ignore[operator]
    return False


def in_range(key: Key, key_range: KeyRange, types: KeyTypes = ()) -> bool:
    """Whether `key` lies in `[lo, hi)`, keys compared column by column with NULLs first."""
    lo, hi = key_range
    return (lo is None or not _key_below(key, as_key(lo), types)) and (
        hi is None or _key_below(key, as_key(hi), types)
    )


@dataclass(frozen=True, slots=True)
class Narrowed:
    """What the comparison found: differing top-level tiles and a bounded sample of keys.

    `missing` are keys the source has and the target lacks, `extra` the reverse, `different`
    keys on both sides with different rows. `found` counts the keys narrowed to; it is the whole
    difference when `complete` (every differing tile was narrowed to its keys).
    """

    tiles: int
    differing: tuple[int, ...]  # indexes of the top-level tiles that differ
    source_rows: int
    target_rows: int
    missing: tuple[Key, ...] = ()
    extra: tuple[Key, ...] = ()
    different: tuple[Key, ...] = ()
    found: tuple[int, int, int] = (0, 0, 0)  # missing, extra, different keys narrowed to
    complete: bool = True
    leaf_ranges: tuple[KeyRange, ...] = field(default=())

    @property
    def equal(self) -> bool:
        return not self.differing


def compare_tiles(
    source: TileSide,
    target: TileSide,
    tiles: Sequence[KeyRange],
    *,
    sample: int,
    leaf_rows: int,
    key_types: KeyTypes = (),
) -> Narrowed:
    """Compare `tiles` on both sides, then narrow the differing ones (module docstring)."""
    mine, theirs = _both(source, target, tiles)
    differing = [i for i, (a, b) in enumerate(zip(mine, theirs, strict=True)) if a != b]
    missing: list[Key] = []
    extra: list[Key] = []
    different: list[Key] = []
    leaves: list[KeyRange] = []
    pending = [(tiles[i], mine[i], theirs[i]) for i in differing]
    complete = True
    while pending:
        if len(missing) + len(extra) + len(different) >= sample:
            complete = False
            break
        key_range, a, b = pending.pop(0)
        halves = None
        if max(a.rows, b.rows) > leaf_rows:
            larger = source if a.rows >= b.rows else target
            middle = larger.key_at(key_range, max(a.rows, b.rows) // 2)
            halves = _split(key_range, middle, key_types)
        if halves is None:  # small enough, or no key splits it: compare its keys
            leaves.append(key_range)
            ours = _by_order(source.keyed(key_range), key_types)
            others = _by_order(target.keyed(key_range), key_types)
            missing += [ours[o][0] for o in sorted(ours) if o not in others]
            extra += [others[o][0] for o in sorted(others) if o not in ours]
            different += [
                ours[o][0] for o in sorted(ours) if o in others and ours[o][1] != others[o][1]
            ]
            continue
        for half, x, y in zip(halves, *_both(source, target, halves), strict=True):
            if x != y:
                pending.append((half, x, y))
    return Narrowed(
        tiles=len(tiles),
        differing=tuple(differing),
        source_rows=sum(d.rows for d in mine),
        target_rows=sum(d.rows for d in theirs),
        missing=tuple(missing[:sample]),
        extra=tuple(extra[:sample]),
        different=tuple(different[:sample]),
        found=(len(missing), len(extra), len(different)),
        complete=complete,
        leaf_ranges=tuple(leaves),
    )


def _by_order(
    keyed: dict[Key, int], key_types: KeyTypes
) -> dict[tuple[tuple[bool, object], ...], tuple[Key, int]]:
    """Each key and its digest by its place in key order: two spellings one key under the
    collation (`'n'` and `'N '` case-insensitive) meet there, so a key whose spelling alone
    differs between the sides is one `different` key, named as the source spells it."""
    out: dict[tuple[tuple[bool, object], ...], tuple[Key, int]] = {}
    for k, digest in keyed.items():
        typed = typed_key(k, key_types)
        out[key_order(typed, key_types)] = (typed, digest)
    return out


def _both(
    source: TileSide, target: TileSide, ranges: Sequence[KeyRange]
) -> tuple[list[TileDigest], list[TileDigest]]:
    """Both sides' digests of `ranges`, asked at once: the source side reads the server while
    the target side's Spark job runs, so a question costs the slower side's time, not both."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="mssql-cdc-reconcile") as pool:
        theirs = pool.submit(target.digests, ranges)
        return source.digests(ranges), theirs.result()


def _split(key_range: KeyRange, middle: KeyBound, types: KeyTypes) -> list[KeyRange] | None:
    lo, hi = key_range
    if middle is None or (lo is not None and not _key_below(as_key(lo), as_key(middle), types)):
        return None
    if hi is not None and not _key_below(as_key(middle), as_key(hi), types):
        return None
    return [(lo, middle), (middle, hi)]


def key_order(key: Key, types: KeyTypes = ()) -> tuple[tuple[bool, object], ...]:
    """A sort key putting keys in SQL Server's key order for their types, NULLs first."""
    return tuple((v is not None, v) for v in _sortable(key, types))
