"""Full-snapshot bounds read off a statistics histogram (decision 1448), the T-SQL that reads
it, and the fall back to NTILE when a server shows none.

The histogram's meaning is Microsoft's
(https://learn.microsoft.com/en-us/sql/relational-databases/system-dynamic-management-views/sys-dm-db-stats-histogram-transact-sql):
`range_rows` rows lie strictly between the previous step's bound and `range_high_key`,
`equal_rows` rows equal it. The oracle counts the rows of each partition in plain Python.
"""

from __future__ import annotations

import itertools
import logging
from bisect import bisect_left
from typing import Any, cast

import pytest
import sqlglot
from hypothesis import given, settings
from hypothesis import strategies as st

from mssql_cdc.sqlserver import TsqlSnapshotReader
from mssql_cdc.sqlserver.histogram import StatsStep, histogram_cuts
from mssql_cdc.sqlserver.metadata import TableColumn
from mssql_cdc.sqlserver.tsql.drivers import Session
from mssql_cdc.sqlserver.tsql.snapshot import first_key_at, key_statistics, stats_histogram
from tests.unit.support.fake_dbapi import FakeConnection

NAME = TableColumn("name", 1, "nvarchar", False, "Latin1_General_CI_AS", 80, 0, 0)
SEQ = TableColumn("seq", 2, "int", False, None, 4, 10, 0)


def histogram_of(values: list[int], every: int) -> list[StatsStep]:
    """Steps over sorted `values` (repeats allowed): the lowest value, every `every`-th
    distinct value after it, and the highest, each with the rows between and equal to it."""
    distinct = sorted(set(values))
    highs = sorted({distinct[0], *distinct[every::every], distinct[-1]})
    steps, previous = [], None
    for high in highs:
        between = sum(1 for v in values if (previous is None or v > previous) and v < high)
        steps.append(StatsStep(high, float(between), float(values.count(high))))
        previous = high
    return steps


def partition_rows(values: list[int], cuts: list[object]) -> list[int]:
    ordered = sorted(values)
    edges = [0, *(bisect_left(ordered, c) for c in cuts), len(ordered)]  # type: ignore[call-overload]
    return [b - a for a, b in itertools.pairwise(edges)]


def test_a_thousand_unique_keys_in_steps_of_five_cut_into_four_equal_partitions() -> None:
    values = list(range(1000))
    steps = histogram_of(values, 5)
    assert len(steps) == 201  # 0, 5, ..., 995 and 999
    cuts = histogram_cuts(steps, 4)
    assert cuts == [250, 500, 750]
    assert partition_rows(values, cuts) == [250, 250, 250, 250]


def test_a_value_with_many_rows_is_a_bound_and_stays_in_one_partition() -> None:
    values = [*range(100), *([100] * 300), *range(101, 200)]
    steps = histogram_of(values, 10)
    cuts = histogram_cuts(steps, 2)
    assert cuts == [100]  # 100 rows below it, 300 equal: nearest to the half, 249.5
    assert partition_rows(values, cuts) == [100, 399]


def test_no_steps_or_one_partition_give_no_bound() -> None:
    assert histogram_cuts([], 8) == []
    assert histogram_cuts([StatsStep("a", 0, 5), StatsStep("z", 10, 1)], 1) == []


def test_the_lowest_bound_is_never_a_cut_and_no_bound_is_used_twice() -> None:
    steps = [StatsStep("a", 0, 1), StatsStep("b", 0, 1)]
    assert histogram_cuts(steps, 8) == ["b"]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.integers(0, 5000), min_size=200, max_size=2000),
    st.integers(2, 32),
    st.integers(1, 5),
)
def test_partitions_differ_from_an_equal_share_by_at_most_one_steps_rows(
    values: list[int], n: int, every: int
) -> None:
    steps = histogram_of(values, every)
    widest = max(s.range_rows + s.equal_rows for s in steps)
    cuts = cast(list[int], histogram_cuts(steps, n))
    assert cuts == sorted(set(cuts))  # rising, each once
    assert set(cuts) <= {s.high_key for s in steps}
    rows = partition_rows(values, cuts)
    assert sum(rows) == len(values)
    if widest * 4 * n <= len(values):  # steps narrow enough to cut finely
        assert len(cuts) == n - 1
        share = len(values) / n
        assert all(abs(r - share) <= 2 * widest for r in rows)


def test_the_histogram_statements_cast_the_sql_variant_bound_to_the_key_type() -> None:
    stats = key_statistics("dbo", "people")
    assert "i.is_primary_key = 1" in stats.text
    assert "ic.key_ordinal = 1" in stats.text
    assert stats.params == ("[dbo].[people]",)
    histogram = stats_histogram("dbo", "people", NAME, 1)
    assert "sys.dm_db_stats_histogram(OBJECT_ID(?), CAST(? AS int))" in histogram.text
    assert "CONVERT(nvarchar(4000), CAST(h.range_high_key AS nvarchar(40)))" in histogram.text
    assert histogram.params == ("[dbo].[people]", "1")
    seek = first_key_at("dbo", "people", [NAME, SEQ], "Zoë")
    assert seek.text.startswith("SELECT TOP (1) ")
    assert "WHERE t.[name] >= CAST(? AS nvarchar(40)) COLLATE Latin1_General_CI_AS" in seek.text
    assert "ORDER BY t.[name], t.[seq]" in seek.text
    assert seek.params == ("Zoë",)
    for statement in (stats, histogram, seek):
        sqlglot.parse_one(statement.text.replace("?", "1"), read="tsql")


COLUMNS = (
    ["name", "column_id", "base_type", "max_length", "precision", "scale", "is_computed",
     "collation_name"],
    [("name", 1, "nvarchar", 80, 0, 0, False, "Latin1_General_CI_AS"),
     ("seq", 2, "int", 4, 10, 0, False, None)],
)  # fmt: skip
STATS = (["stats_id", "lead"], [(1, "name")])
HISTOGRAM = (
    ["step_number", "range_rows", "equal_rows", "k0"],
    [(1, 0.0, 1.0, "a"), (2, 99.0, 1.0, "m"), (3, 98.0, 1.0, "z")],
)


def reader(answers: dict[str, Any]) -> tuple[TsqlSnapshotReader, FakeConnection]:
    conn = FakeConnection({"FROM sys.columns AS c WHERE": COLUMNS, **answers})
    session = Session(conn, "qmark", arrow=False)
    return TsqlSnapshotReader(session, isolation="readCommitted", lock_timeout_ms=None), conn


def test_a_one_column_key_is_cut_at_the_histogram_bounds_without_reading_the_table() -> None:
    snapshots, conn = reader({"FROM sys.indexes": STATS, "dm_db_stats_histogram": HISTOGRAM})
    assert snapshots.histogram_bounds("dbo", "people", ["name"], 2) == ["m"]
    assert not any("[dbo].[people] AS t" in text for text, _ in conn.executed)


def test_a_composite_key_seeks_the_first_whole_key_at_each_bound() -> None:
    snapshots, conn = reader(
        {
            "FROM sys.indexes": STATS,
            "dm_db_stats_histogram": HISTOGRAM,
            "SET TRANSACTION": ([], []),
            "SELECT TOP (1)": (["k0", "k1"], [("m", 7)]),
        }
    )
    assert snapshots.histogram_bounds("dbo", "people", ["name", "seq"], 2) == [("m", "7")]
    seeks = [params for text, params in conn.executed if text.startswith("SELECT TOP (1)")]
    assert seeks == [("m",)]


class ServerError(Exception):
    """An error as pymssql raises it: (number, message)."""


@pytest.mark.parametrize(
    "answers",
    [
        {"FROM sys.indexes": STATS, "dm_db_stats_histogram": ServerError(208, b"Invalid object")},
        {"FROM sys.indexes": STATS, "dm_db_stats_histogram": ServerError(229, b"denied")},
        {"FROM sys.indexes": ([], [])},  # no primary key
        {"FROM sys.indexes": (["stats_id", "lead"], [(1, "seq")])},  # led by another column
        {"FROM sys.indexes": STATS, "dm_db_stats_histogram": (HISTOGRAM[0], [])},  # no steps
    ],
)
def test_no_histogram_answers_none_and_says_so(
    answers: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    snapshots, _ = reader(answers)
    with caplog.at_level(logging.INFO, logger="mssql_cdc.sqlserver.snapshot"):
        assert snapshots.histogram_bounds("dbo", "people", ["name"], 4) is None
    assert "[dbo].[people]" in caplog.text


def test_another_server_error_is_not_taken_for_a_missing_histogram() -> None:
    snapshots, _ = reader(
        {"FROM sys.indexes": STATS, "dm_db_stats_histogram": ServerError(1205, b"deadlock")}
    )
    with pytest.raises(ServerError):
        snapshots.histogram_bounds("dbo", "people", ["name"], 4)
