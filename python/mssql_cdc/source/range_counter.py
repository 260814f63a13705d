"""A range's counts, taken from the Arrow batches as a task reads them (decision 0380).

The sink's commit needs, before its append, the batch's rows, LSN and commit-time ranges and
operation counts. Counted here, on the batches the task hands to Spark anyway (vectorised, a
few milliseconds per 100,000 rows), and written into the range's metrics file, they spare the
sink an aggregate job over the cached batch. Pure: no Spark, no backend.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from mssql_cdc.core import Operation, RangeCounts

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["RangeCounter"]

# the operations the facts count; an update's before-image counts only in rows
_OPERATIONS = {
    Operation.DELETE: "deletes",
    Operation.INSERT: "inserts",
    Operation.UPDATE_AFTER: "updates",
}


class RangeCounter:
    """Accumulates `RangeCounts` over the batches of one range."""

    def __init__(self) -> None:
        self._rows = 0
        self._lsns: list[str] = []
        self._times: list[datetime] = []
        self._ops = dict.fromkeys(_OPERATIONS.values(), 0)

    def add(self, batch: pa.RecordBatch) -> None:
        """Count one batch; it must hold `_start_lsn`, `_operation` and `_commit_ts`."""
        import pyarrow.compute as pc

        if batch.num_rows == 0:
            return
        self._rows += batch.num_rows
        lsns = pc.min_max(batch.column("_start_lsn"))
        times = pc.min_max(batch.column("_commit_ts"))
        self._lsns.extend(
            str(v) for v in (lsns["min"].as_py(), lsns["max"].as_py()) if v is not None
        )
        self._times.extend(
            _naive_utc(v) for v in (times["min"].as_py(), times["max"].as_py()) if v is not None
        )
        counted = pc.value_counts(batch.column("_operation"))
        for entry in counted.to_pylist():
            name = _OPERATIONS.get(entry["values"])
            if name is not None:
                self._ops[name] += int(entry["counts"])

    def result(self) -> RangeCounts:
        times = self._times
        return {
            "rows": self._rows,
            "min_lsn": min(self._lsns) if self._lsns else None,
            "max_lsn": max(self._lsns) if self._lsns else None,
            "min_commit_ts": _text(min(times)) if times else None,
            "max_commit_ts": _text(max(times)) if times else None,
            "deletes": self._ops["deletes"],
            "inserts": self._ops["inserts"],
            "updates": self._ops["updates"],
        }


def _naive_utc(value: Any) -> datetime:
    if not isinstance(value, datetime):
        raise TypeError(f"_commit_ts holds {type(value).__name__}, not a timestamp")
    moment: datetime = value
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment


def _text(value: datetime) -> str:
    return value.isoformat(timespec="microseconds")
