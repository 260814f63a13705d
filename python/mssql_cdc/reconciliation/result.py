"""What `reconcile()` returns: `ReconcileResult`, and which kind of table it compared."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any, Literal

__all__ = ["AGAINST", "Against", "ReconcileResult"]

Against = Literal["silver", "bronze"]
AGAINST: tuple[Against, ...] = ("silver", "bronze")


@dataclass(frozen=True, slots=True)
class ReconcileResult:
    """A reconcile's verdict: equal or not, and a bounded sample of the keys that differ.

    Attributes:
        equal: True when every tile's row count and digest matched.
        lsn: the LSN the source was compared as of (canonical): the target's own position.
        against: "silver" or "bronze", the kind of `target`.
        target: the table compared, as given.
        tiles: how many key tiles the table was first cut into.
        differing_tiles: how many of those differed.
        source_rows: rows of the source as of `lsn`.
        target_rows: rows of the target (bronze: its latest image per key).
        missing: keys in the source, not the target, at most `sample` of them; JSON values
            (a list for a composite key).
        extra: keys in the target, not the source; at most `sample`, as `missing`.
        different: keys in both whose rows differ; at most `sample`, as `missing`.
        missing_count: the missing keys counted in the tiles narrowed down to.
        extra_count: the extra keys counted likewise.
        different_count: the different keys counted likewise.
        complete: True when the counts are the whole difference, else they are a lower bound.
        columns: the columns compared, keys included.
        skipped_columns: target columns no digest covers (float, binary, ...), not compared.
        seconds: the reconcile's wall-clock time.
        repaired_tiles: tiles read again by `repair=True`; 0 without a repair or when equal.
    """

    equal: bool
    lsn: str  # the source was compared as of this LSN: the target's own position
    against: Against
    target: str
    tiles: int
    differing_tiles: int
    source_rows: int
    target_rows: int
    missing: tuple[Any, ...]
    extra: tuple[Any, ...]
    different: tuple[Any, ...]
    missing_count: int
    extra_count: int
    different_count: int
    complete: bool
    columns: tuple[str, ...]  # the columns compared, keys included
    skipped_columns: tuple[str, ...]  # target columns no digest covers (float, binary, ...)
    seconds: float
    repaired_tiles: int = 0  # tiles re-snapshotted by repair=True

    def as_dict(self) -> dict[str, Any]:
        """The result as JSON can hold it (tuples as lists)."""
        return json.loads(json.dumps(asdict(self)))  # type: ignore[no-any-return]
