"""The statistics the emulator keeps on a primary key (decision 1448), against a histogram
counted in plain Python from the rows the test inserted.

Microsoft's meaning of the columns
(https://learn.microsoft.com/en-us/sql/relational-databases/system-dynamic-management-views/sys-dm-db-stats-histogram-transact-sql):
at most 200 steps over the first key column; the lowest value is the first step's bound;
`range_rows` rows lie strictly between a step's bound and the previous one, `equal_rows` equal
it. For a unique key, `equal_rows` is 1 on every step. sys.stats names an index's statistics
after the index and gives them the index's id
(https://learn.microsoft.com/en-us/sql/relational-databases/system-catalog-views/sys-stats-transact-sql).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymssql
import pytest

from mssql_cdc.emulator import (
    Emulator,
    TdsServer,
    io_statistics,
    reset_io_statistics,
    statistics_io_name,
)
from mssql_cdc.errors import ConfigError

ROWS = 5_000
NAMES = [f"k{i:06d}" for i in range(ROWS)]  # the same order in Python and in any collation


@pytest.fixture
def people(tmp_path: Path) -> Iterator[Emulator]:
    emu = Emulator.create(tmp_path / "e.db")
    emu.create_table("dbo.people", {"name": "nvarchar(40)", "n": "int"}, primary_key="name")
    shuffled = NAMES[:]
    random.Random(7).shuffle(shuffled)
    emu.commit([("insert", "dbo.people", {"name": k, "n": 1}) for k in shuffled])
    try:
        yield emu
    finally:
        emu.close()


def check_against_rows(steps: list[tuple[Any, float, float]], values: list[Any]) -> None:
    """Each step's counts are those of `values` between its bound and the previous one."""
    counts = Counter(values)
    assert 1 <= len(steps) <= 200
    assert steps[0][0] == min(values)
    assert steps[-1][0] == max(values)
    previous = None
    for high, range_rows, equal_rows in steps:
        between = sum(
            n for v, n in counts.items() if (previous is None or v > previous) and v < high
        )
        assert (range_rows, equal_rows) == (between, counts[high])
        previous = high
    assert sum(r + e for _, r, e in steps) == len(values)


def test_a_unique_key_s_histogram_counts_the_rows_between_its_steps(people: Emulator) -> None:
    stats = people.update_statistics("dbo.people")
    assert (stats.rows, stats.rows_sampled, stats.modification_counter) == (ROWS, ROWS, 0)
    steps = [(s.range_hi_key, s.range_rows, s.eq_rows) for s in stats.histogram]
    check_against_rows(steps, NAMES)
    assert all(s.eq_rows == 1 for s in stats.histogram)
    assert all(s.distinct_range_rows == s.range_rows for s in stats.histogram)


def test_a_composite_key_s_histogram_is_over_its_first_column(tmp_path: Path) -> None:
    emu = Emulator.create(tmp_path / "e.db")
    emu.create_table("dbo.t", {"a": "varchar(10)", "b": "int"}, primary_key=["a", "b"])
    rows = [(f"a{i % 300:04d}", i) for i in range(3_000)]
    emu.commit([("insert", "dbo.t", {"a": a, "b": b}) for a, b in rows])
    stats = emu.update_statistics("dbo.t")
    check_against_rows(
        [(s.range_hi_key, s.range_rows, s.eq_rows) for s in stats.histogram], [a for a, _ in rows]
    )
    emu.close()


def test_a_build_reads_every_row_counted_apart_from_the_table_s_reads(people: Emulator) -> None:
    reset_io_statistics(people.path)
    people.update_statistics("dbo.people")
    io = io_statistics(people.path)
    assert "dbo.people" not in io
    assert io[statistics_io_name("dbo.people")].rows_read == 2 * ROWS  # a count, then the scan


def test_a_read_of_stale_statistics_rebuilds_them_past_sql_server_s_threshold(
    people: Emulator,
) -> None:
    """https://learn.microsoft.com/en-us/sql/relational-databases/statistics/statistics: from
    SQL Server 2016, MIN(500 + 0.20 * n, SQRT(1000 * n)) changes, here SQRT(5,000,000) = 2236."""
    people.update_statistics("dbo.people")
    reader = people.reader()
    people.commit([("insert", "dbo.people", {"name": f"z{i:05d}", "n": 1}) for i in range(2236)])
    people.commit([("update", "dbo.people", {"name": "z00000", "n": 2})])  # no key change
    found = reader.statistics("dbo.people", auto_update=False)
    assert found is not None
    assert found.modification_counter == 2236
    assert found.rows == ROWS
    rebuilt = reader.statistics("dbo.people")
    assert rebuilt is not None
    assert (rebuilt.rows, rebuilt.modification_counter) == (ROWS + 2236, 0)
    reader.close()


def test_a_heap_has_no_statistics(tmp_path: Path) -> None:
    emu = Emulator.create(tmp_path / "e.db")
    emu.create_table("dbo.h", {"x": "int"})
    assert emu.reader().statistics("dbo.h") is None
    with pytest.raises(ConfigError, match="heap"):
        emu.update_statistics("dbo.h")
    emu.close()


@pytest.fixture
def served(people: Emulator) -> Iterator[TdsServer]:
    with people.serve() as server:
        yield server


def _query(server: TdsServer, sql: str) -> list[tuple[Any, ...]]:
    conn = pymssql.connect(**server.connect_kwargs("pymssql"), login_timeout=10, timeout=10)
    try:
        cursor = conn.cursor()
        cursor.execute(sql)
        rows = cursor.fetchall() if cursor.description else []
        conn.commit()
        return list(rows)
    finally:
        conn.close()


def test_sys_stats_and_the_histogram_function_answer_over_tds(served: TdsServer) -> None:
    [stats] = _query(
        served,
        "SELECT name, stats_id, auto_created, user_created FROM sys.stats "
        "WHERE object_id = OBJECT_ID('dbo.people')",
    )
    assert stats == ("PK_people", 1, False, False)
    steps = _query(
        served,
        "SELECT CONVERT(nvarchar(4000), CAST(range_high_key AS nvarchar(40))), range_rows, "
        "equal_rows FROM sys.dm_db_stats_histogram(OBJECT_ID('dbo.people'), 1) ORDER BY "
        "step_number",
    )
    check_against_rows([(k, r, e) for k, r, e in steps], NAMES)  # built when first read
    [props] = _query(
        served,
        "SELECT rows, rows_sampled, steps, modification_counter FROM "
        "sys.dm_db_stats_properties(OBJECT_ID('dbo.people'), 1)",
    )
    assert props == (ROWS, ROWS, len(steps), 0)
    assert (
        _query(served, "SELECT * FROM sys.dm_db_stats_histogram(OBJECT_ID('dbo.people'), 2)") == []
    )


def test_update_statistics_and_sp_updatestats_rebuild_over_tds(
    people: Emulator, served: TdsServer
) -> None:
    people.update_statistics("dbo.people")
    people.commit([("insert", "dbo.people", {"name": "zz", "n": 1})])
    reset_io_statistics(people.path)
    _query(served, "UPDATE STATISTICS dbo.people WITH FULLSCAN")
    assert io_statistics(people.path)[statistics_io_name("dbo.people")].rows_read == 2 * (ROWS + 1)
    people.commit([("delete", "dbo.people", {"name": "zz"})])
    _query(served, "EXEC sp_updatestats")
    stats = people.reader().statistics("dbo.people", auto_update=False)
    assert stats is not None
    assert (stats.rows, stats.modification_counter) == (ROWS, 0)
