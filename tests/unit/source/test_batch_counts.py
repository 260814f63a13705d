"""The reader's range counts and the sink's fold of them, against plain-Python oracles."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow as pa
import pytest

from mssql_cdc.facts.rows import BatchAggregates
from mssql_cdc.sink.counts import aggregates_from_counts
from mssql_cdc.source.range_counter import RangeCounter

T0 = datetime(2026, 9, 28, 13, 50, 0, 123456)


def _batch(rows: list[tuple[str, int, datetime]], tz: str | None = None) -> pa.RecordBatch:
    return pa.record_batch(
        {
            "_start_lsn": pa.array([r[0] for r in rows], pa.string()),
            "_operation": pa.array([r[1] for r in rows], pa.int32()),
            "_commit_ts": pa.array([r[2] for r in rows], pa.timestamp("us", tz=tz)),
            "id": pa.array(range(len(rows)), pa.int64()),
        }
    )


def _rows(first: int, n: int) -> list[tuple[str, int, datetime]]:
    ops = (1, 2, 3, 4, 2)
    return [
        (f"0x{i:020X}", ops[i % len(ops)], T0 + timedelta(milliseconds=i))
        for i in range(first, first + n)
    ]


def _oracle(rows: list[tuple[str, int, datetime]]) -> BatchAggregates:
    return BatchAggregates(
        rows=len(rows),
        min_lsn=min(r[0] for r in rows) if rows else None,
        max_lsn=max(r[0] for r in rows) if rows else None,
        min_commit_ts=min(r[2] for r in rows) if rows else None,
        max_commit_ts=max(r[2] for r in rows) if rows else None,
        deletes=sum(r[1] == 1 for r in rows),
        inserts=sum(r[1] == 2 for r in rows),
        updates=sum(r[1] == 4 for r in rows),
    )


def _file(counter: RangeCounter) -> dict[str, Any]:
    return {"kind": "range", "counts": counter.result()}


def test_two_ranges_counted_batch_by_batch_fold_to_the_batchs_aggregates() -> None:
    first, second = RangeCounter(), RangeCounter()
    a, b, c = _rows(0, 7), _rows(7, 5), _rows(12, 9)
    first.add(_batch(a))
    first.add(_batch(b))
    second.add(_batch(c))
    folded = aggregates_from_counts([_file(second), _file(first)], 2)
    assert folded == _oracle(a + b + c)


def test_an_aware_utc_commit_time_is_counted_as_naive_utc() -> None:
    counter = RangeCounter()
    rows = _rows(0, 3)
    counter.add(_batch([(x, op, t.replace(tzinfo=UTC)) for x, op, t in rows], tz="UTC"))
    assert aggregates_from_counts([_file(counter)], 1) == _oracle(rows)


def test_empty_ranges_fold_to_zero_rows_and_no_bounds() -> None:
    counter = RangeCounter()
    counter.add(_batch([]))
    assert aggregates_from_counts([_file(counter), _file(RangeCounter())], 2) == _oracle([])
    assert aggregates_from_counts([], 0) == _oracle([])


def test_a_batch_without_the_stream_columns_cannot_be_counted() -> None:
    with pytest.raises(KeyError):
        RangeCounter().add(pa.record_batch({"id": pa.array([1])}))


def _counted() -> dict[str, Any]:
    counter = RangeCounter()
    counter.add(_batch(_rows(0, 4)))
    return _file(counter)


@pytest.mark.parametrize(
    ("files", "partitions"),
    [
        ([_counted()], 2),  # a partition left no file
        ([_counted(), _counted()], 1),  # a file too many
        ([{"kind": "range"}], 1),  # a task that could not count
        ([{**_counted(), "kind": "chunk"}], 1),
        ([{"kind": "range", "counts": {**_counted()["counts"], "rows": -1}}], 1),
        ([{"kind": "range", "counts": {**_counted()["counts"], "rows": True}}], 1),
        ([{"kind": "range", "counts": {**_counted()["counts"], "max_lsn": None}}], 1),
        ([{"kind": "range", "counts": {**_counted()["counts"], "min_commit_ts": "soon"}}], 1),
        (
            [
                {
                    "kind": "range",
                    "counts": {
                        **_counted()["counts"],
                        "min_commit_ts": "2026-09-28T13:50:00+02:00",
                    },
                }
            ],
            1,
        ),
        (
            [
                {
                    "kind": "range",
                    "counts": {k: v for k, v in _counted()["counts"].items() if k != "updates"},
                }
            ],
            1,
        ),
    ],
)
def test_counts_that_do_not_cover_the_batch_leave_the_sink_to_count(
    files: list[dict[str, Any]], partitions: int
) -> None:
    assert aggregates_from_counts(files, partitions) is None
