"""The batch's aggregates folded from the counts its tasks wrote (decision 0380).

Used only when the batch is the `mssql_cdc` source's output unchanged (`to_delta`), and only
when every partition left its range file with counts: otherwise the sink runs its aggregate
job. Pure: the sink reads the files and the partition count, this folds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from mssql_cdc.facts import BatchAggregates

__all__ = ["aggregates_from_counts"]

_COUNTERS = ("rows", "deletes", "inserts", "updates")


def aggregates_from_counts(
    files: Sequence[Mapping[str, Any]], partitions: int
) -> BatchAggregates | None:
    """Fold the `counts` of the batch's range files; None when they do not cover the batch.

    They cover it when there is exactly one file per partition, each a range file with a
    well-formed `counts` object (a task that could not count, or a file that could not be
    written, leaves the sink to count).
    """
    if len(files) != partitions or any(f.get("kind") != "range" for f in files):
        return None
    counts = [f.get("counts") for f in files]
    if not all(isinstance(c, Mapping) and _well_formed(c) for c in counts):
        return None
    parsed: list[Mapping[str, Any]] = [c for c in counts if isinstance(c, Mapping)]
    lsns = [c[k] for c in parsed for k in ("min_lsn", "max_lsn") if c[k] is not None]
    times = [
        datetime.fromisoformat(c[k])
        for c in parsed
        for k in ("min_commit_ts", "max_commit_ts")
        if c[k] is not None
    ]
    return BatchAggregates(
        rows=sum(int(c["rows"]) for c in parsed),
        min_lsn=min(lsns) if lsns else None,
        max_lsn=max(lsns) if lsns else None,
        min_commit_ts=min(times) if times else None,
        max_commit_ts=max(times) if times else None,
        deletes=sum(int(c["deletes"]) for c in parsed),
        inserts=sum(int(c["inserts"]) for c in parsed),
        updates=sum(int(c["updates"]) for c in parsed),
    )


def _well_formed(counts: Mapping[str, Any]) -> bool:
    if not all(type(counts.get(k)) is int and counts[k] >= 0 for k in _COUNTERS):
        return False
    for key in ("min_lsn", "max_lsn", "min_commit_ts", "max_commit_ts"):
        if key not in counts or not (counts[key] is None or isinstance(counts[key], str)):
            return False
    try:
        for key in ("min_commit_ts", "max_commit_ts"):
            if counts[key] is not None and datetime.fromisoformat(counts[key]).tzinfo is not None:
                return False
    except ValueError:
        return False
    # a range with rows has both bounds; one without has neither
    bounds = [counts[k] for k in ("min_lsn", "max_lsn", "min_commit_ts", "max_commit_ts")]
    return all(b is not None for b in bounds) if counts["rows"] else all(b is None for b in bounds)
