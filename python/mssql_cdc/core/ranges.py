"""Cutting a micro-batch into Spark partitions (docs/source.md, 'Capture instances').

Pure functions over LSN text: a batch's interval is cut at the newer capture instance's start
LSN into pieces, and each piece into commit-aligned ranges of about equal change rows. The
backend only reports tiles; everything else here is arithmetic, so it is tested with fakes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from mssql_cdc.core import lsn
from mssql_cdc.core.offsets import LsnRange, StreamOffset

__all__ = [
    "MIN_ROWS_PER_RANGE",
    "Piece",
    "Tile",
    "TileSource",
    "batch_ranges",
    "cut_at_switch",
    "split_piece",
]

MIN_ROWS_PER_RANGE = 50_000
"""A range holds at least this many change rows unless its piece has fewer."""


@dataclass(frozen=True, slots=True)
class Tile:
    """One NTILE group of a piece's change rows: its highest commit LSN and its row count."""

    last_lsn: lsn.Lsn
    rows: int


@dataclass(frozen=True, slots=True)
class Piece:
    """The part `[from_lsn, to_lsn]` of a batch served by one capture instance."""

    capture_instance: str
    from_lsn: lsn.Lsn
    to_lsn: lsn.Lsn


class TileSource(Protocol):
    """What range splitting needs from a backend: NTILE tiles of a piece's change rows."""

    def split_points(
        self, capture_instance: str, from_lsn: lsn.Lsn, to_lsn: lsn.Lsn, n: int
    ) -> Sequence[Tile]: ...


def cut_at_switch(
    first: lsn.Lsn, last: lsn.Lsn, older: str, newer: str | None, switch_lsn: lsn.Lsn | None
) -> list[Piece]:
    """Cut `[first, last]` between the table's instances at the newer one's start LSN S.

    The older instance serves LSNs below S and the newer one S and above; a piece whose start
    would be above its end is dropped. With one instance (`newer` None) the interval is one piece.
    """
    if first > last:
        return []
    if newer is None or switch_lsn is None:
        return [Piece(older, first, last)]
    pieces: list[Piece] = []
    if first < switch_lsn:
        pieces.append(Piece(older, first, min(last, lsn.decrement(switch_lsn))))
    if last >= switch_lsn:
        pieces.append(Piece(newer, max(first, switch_lsn), last))
    return pieces


def split_piece(
    from_lsn: lsn.Lsn, to_lsn: lsn.Lsn, tiles: Sequence[Tile], *, min_rows: int
) -> list[tuple[lsn.Lsn, lsn.Lsn]]:
    """Return the closed ranges that cover `[from_lsn, to_lsn]`, cut at tile ends.

    Consecutive tiles merge into groups of at least `min_rows` rows (a short last group joins
    the one before); each group ends at its highest commit LSN, duplicates dropped, and the last
    range ends at `to_lsn`. No range is empty or inverted; a piece without rows is one range.

    Raises:
        ValueError: `from_lsn > to_lsn` or `min_rows < 1`.
    """
    if from_lsn > to_lsn:
        raise ValueError(f"split_piece: from {from_lsn} is above to {to_lsn}")
    if min_rows < 1:
        raise ValueError(f"split_piece: min_rows={min_rows} must be at least 1")
    group_ends: list[lsn.Lsn] = []
    pending = 0
    for tile in tiles:
        pending += tile.rows
        if pending >= min_rows:
            group_ends.append(tile.last_lsn)
            pending = 0
    if pending > 0 and group_ends:
        group_ends[-1] = tiles[-1].last_lsn  # a short last group joins the one before
    # The last group ends at the piece's end, so later rows of the piece (none, or rows that
    # arrived after tiling) are read too. An end outside the piece cannot come from a correct
    # backend, and is ignored rather than allowed to invert a range.
    ends = [e for e in sorted(set(group_ends))[:-1] if from_lsn <= e < to_lsn]
    ranges: list[tuple[lsn.Lsn, lsn.Lsn]] = []
    start = from_lsn
    for end in [*ends, to_lsn]:
        ranges.append((start, end))
        if end != to_lsn:
            start = lsn.increment(end)
    return ranges


def batch_ranges(
    source: TileSource,
    pieces: Sequence[Piece],
    *,
    start: StreamOffset,
    end: StreamOffset,
    num_partitions: int,
    time_zone: str,
    null_columns: Mapping[str, tuple[str, ...]],
    min_rows: int = MIN_ROWS_PER_RANGE,
) -> list[LsnRange]:
    """Split each piece into ranges and return them in LSN order, ready for Spark.

    The range ending at `end.lsn` is flagged `last`; every range carries the start offset's
    commit time (`lost_from_ts` of a possible skip) and the batch's two offsets.

    Raises:
        ValueError: `num_partitions < 1`, or the pieces are not ascending and disjoint.
    """
    if num_partitions < 1:
        raise ValueError(f"batch_ranges: num_partitions={num_partitions} must be at least 1")
    out: list[LsnRange] = []
    for piece in pieces:
        if out and piece.from_lsn <= out[-1].to_lsn:
            raise ValueError(f"batch_ranges: piece {piece} overlaps or precedes the one before")
        tiles = source.split_points(
            piece.capture_instance, piece.from_lsn, piece.to_lsn, num_partitions
        )
        for first, last in split_piece(piece.from_lsn, piece.to_lsn, tiles, min_rows=min_rows):
            out.append(
                LsnRange(
                    capture_instance=piece.capture_instance,
                    from_lsn=first,
                    to_lsn=last,
                    last=last == end.lsn,
                    start_ts=start.commit_ts,
                    null_columns=null_columns.get(piece.capture_instance, ()),
                    time_zone=time_zone,
                    batch_start_lsn=start.lsn,
                    batch_end_lsn=end.lsn,
                )
            )
    return out
