"""What planning a full snapshot of a 1,000,000-row table keyed by nvarchar or by
uniqueidentifier costs the server once its primary key has statistics (decision 1448), on every
backend: the histogram is read, no row of the table, never a sort of it (NTILE read and sorted
every row, and over T-SQL outgrew the emulator's per-request memory).

The oracles are independent of the plan: the rows as a plain pymssql `SELECT` reads them (each
row carries a number `v`), and Python's counts of the numbers each partition gives. The
emulator's counts of the rows its reads stepped over are the measure (decision 1411).
"""

from __future__ import annotations

import itertools
import random
import uuid
from collections import Counter
from pathlib import Path

import pymssql
import pytest

from mssql_cdc.emulator import Emulator, io_statistics, reset_io_statistics, serve
from mssql_cdc.options.config import SourceConfig
from mssql_cdc.source.snapshot_format import CdcSnapshotReader, SnapshotPartition
from mssql_cdc.sqlserver.metadata import ReadColumn
from tests.spark.support.backends import BACKENDS, Backend, backend_options

ROWS = 1_000_000
PARTITIONS = 16
COLUMNS = [ReadColumn("v", "INT")]


def _name(i: int) -> str:
    """Keys of mixed case and length, so the collation's order is not Python's."""
    word = f"{i * 7919 % 1_000_003:07d}"
    return ("Name-" if i % 3 else "name-") + word + "x" * (i % 5)


def _keys(sql_type: str) -> list[object]:
    if sql_type == "nvarchar(40)":
        return [_name(i) for i in range(ROWS)]
    rng = random.Random(5)
    return [uuid.UUID(int=rng.getrandbits(128)) for _ in range(ROWS)]


@pytest.fixture(scope="module", params=["nvarchar(40)", "uniqueidentifier"])
def keyed(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """dbo.big with ROWS rows keyed by the type, statistics built, CDC enabled."""
    emu = Emulator.create(tmp_path_factory.mktemp("keyed") / "e.db")
    emu.create_table("dbo.big", {"k": request.param, "v": "int"}, primary_key="k")
    keys = _keys(request.param)
    assert len(set(keys)) == ROWS
    order = list(range(ROWS))
    random.Random(3).shuffle(order)
    for start in range(0, ROWS, 200_000):
        chunk = order[start : start + 200_000]
        emu.commit([("insert", "dbo.big", {"k": keys[i], "v": i}) for i in chunk])
    emu.enable_cdc("dbo.big")
    emu.update_statistics("dbo.big")
    path = emu.path
    emu.close()
    return path


@pytest.fixture(scope="module")
def table_numbers(keyed: Path) -> Counter[int]:
    """Every row's number as a plain pymssql SELECT reads it, with no plan of the library's."""
    with serve(keyed) as server:
        conn = pymssql.connect(**server.connect_kwargs("pymssql"), login_timeout=10, timeout=600)
        try:
            cursor = conn.cursor()
            cursor.execute("SELECT v FROM dbo.big")
            return Counter(int(row[0]) for row in cursor.fetchall())
        finally:
            conn.close()


def _plan(path: Path, backend: Backend) -> tuple[CdcSnapshotReader, list[SnapshotPartition]]:
    config = SourceConfig.from_options(
        {"captureInstance": "dbo_big", **backend_options(path, backend)}
    )
    reader = CdcSnapshotReader(config, COLUMNS, PARTITIONS)
    return reader, list(reader.partitions())  # type: ignore[arg-type]


@pytest.mark.parametrize("backend", BACKENDS)
def test_planning_a_million_keys_reads_the_histogram_not_the_table(
    keyed: Path, table_numbers: Counter[int], backend: Backend
) -> None:
    reset_io_statistics(keyed)
    reader, parts = _plan(keyed, backend)
    costs = io_statistics(keyed)
    assert "dbo.big (statistics)" not in costs  # built before: not rebuilt
    assert "dbo.big" not in costs  # no row of the table read
    ranges = [r for p in parts for r in p.ranges]
    assert len(ranges) == PARTITIONS
    assert ranges[0][1] is None
    assert ranges[-1][2] is None
    assert all(a[2] == b[1] for a, b in itertools.pairwise(ranges))

    # Every partition read: the union is the table, each row once, in about equal shares.
    shares = [
        Counter(v for batch in reader.read(part) for v in batch.column("v").to_pylist())
        for part in parts
    ]
    seen: Counter[int] = sum(shares, Counter())
    assert seen == table_numbers
    assert sum(seen.values()) == ROWS
    sizes = [sum(s.values()) for s in shares]
    assert max(sizes) <= 1.5 * ROWS / PARTITIONS
    assert min(sizes) >= 0.5 * ROWS / PARTITIONS
