"""What `reconcile()` returns: `ReconcileResult` (with a `SampleVerdict` when sampled), and which
kind of table it compared."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any, Literal

__all__ = ["AGAINST", "Against", "ReconcileResult", "SampleVerdict"]

Against = Literal["silver", "bronze"]
AGAINST: tuple[Against, ...] = ("silver", "bronze")


@dataclass(frozen=True, slots=True)
class SampleVerdict:
    """What a sampled reconcile checked, and what that says about the whole table.

    Attributes:
        fraction: the share of the key space checked (keys chosen by a hash of the key, the
            same keys on both sides).
        keys: the keys checked: the source's rows in the sample and the target's keys in it
            the source lacks.
        differing: the sampled keys found missing, extra or different.
        level: the confidence level of `share_below`, 95%.
        share_below: with confidence `level`, the share of the table's keys that differ is
            below this (a one-sided Clopper-Pearson bound); None when `differing` is only a
            lower bound (narrowing stopped at `sample` keys), so no bound follows.
    """

    fraction: float
    keys: int
    differing: int
    level: float
    share_below: float | None

    @property
    def statement(self) -> str:
        """The verdict in words, such as "0 of 30000 sampled keys differ: below 0.010% of
        the table's keys differ, at 95% confidence"."""
        head = f"{self.differing} of {self.keys} sampled keys differ"
        if self.share_below is None:
            return f"{head} (at least; narrowing stopped): no bound on the whole table"
        return (
            f"{head}: below {self.share_below:.3%} of the table's keys differ, "
            f"at {self.level:.0%} confidence"
        )


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
        sampled: with `sampled=`, what the sample checked and the bound it gives; then every
            count above is of the sampled keys. None when every row was compared.
        report_run: with `report_table=`, the run id its rows carry there; else None.
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
    sampled: SampleVerdict | None = None  # a sampled reconcile's sample and bound
    report_run: str | None = None  # the run id of its rows in report_table

    def as_dict(self) -> dict[str, Any]:
        """The result as JSON can hold it (tuples as lists)."""
        return json.loads(json.dumps(asdict(self)))  # type: ignore[no-any-return]
