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

    `missing` keys are in the source and not in the target, `extra` the reverse, `different`
    in both with different rows; keys are JSON values (a list for a composite key). The
    `*_count` fields count the keys narrowed to, the whole difference when `complete`.
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
