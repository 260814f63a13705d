"""What planning a full snapshot of a 1,000,000-row table keyed by nvarchar costs the server
once its primary key has statistics (decision 1448), on every backend: the histogram is read,
a few thousand rows at most, never a sort of the table (NTILE read and sorted every row).

The oracles are independent of the plan: the keys as a plain pymssql `SELECT` reads them, and
Python's own count of the keys that fall in each partition. The emulator's counts of the rows
its reads stepped over are the measure (decision 1411).
"""

from __future__ import annotations

import itertools
import random
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
COLUMNS = [ReadColumn("name", "STRING"), ReadColumn("v", "INT")]


def _name(i: int) -> str:
    """Keys of mixed case and length, so the collation's order is not Python's."""
    word = f"{i * 7919 % 1_000_003:07d}"
    return ("Name-" if i % 3 else "name-") + word + "x" * (i % 5)


@pytest.fixture(scope="module")
def words(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """dbo.words with ROWS rows keyed by nvarchar, statistics built, CDC enabled."""
    emu = Emulator.create(tmp_path_factory.mktemp("words") / "e.db")
    emu.create_table("dbo.words", {"name": "nvarchar(40)", "v": "int"}, primary_key="name")
    keys = [_name(i) for i in range(ROWS)]
    random.Random(3).shuffle(keys)
    step = 200_000
    for start in range(0, ROWS, step):
        emu.commit(
            [("insert", "dbo.words", {"name": k, "v": 1}) for k in keys[start : start + step]]
        )
    emu.enable_cdc("dbo.words")
    emu.update_statistics("dbo.words")
    path = emu.path
    emu.close()
    return path


@pytest.fixture(scope="module")
def table_keys(words: Path) -> list[str]:
    """Every key as a plain pymssql SELECT reads it, with no plan of the library's."""
    with serve(words) as server:
        conn = pymssql.connect(**server.connect_kwargs("pymssql"), login_timeout=10, timeout=600)
        try:
            cursor = conn.cursor()
            cursor.execute("SELECT name FROM dbo.words")
            return [str(row[0]) for row in cursor.fetchall()]
        finally:
            conn.close()


def _plan(path: Path, backend: Backend) -> tuple[CdcSnapshotReader, list[SnapshotPartition]]:
    config = SourceConfig.from_options(
        {"captureInstance": "dbo_words", **backend_options(path, backend)}
    )
    reader = CdcSnapshotReader(config, COLUMNS, PARTITIONS)
    return reader, list(reader.partitions())  # type: ignore[arg-type]


@pytest.mark.parametrize("backend", BACKENDS)
def test_planning_a_million_nvarchar_keys_reads_the_histogram_not_the_table(
    words: Path, table_keys: list[str], backend: Backend
) -> None:
    reset_io_statistics(words)
    reader, parts = _plan(words, backend)
    costs = io_statistics(words)
    assert "dbo.words (statistics)" not in costs  # built before: not rebuilt
    assert costs.get("dbo.words") is None or costs["dbo.words"].rows_read <= 2_000
    ranges = [r for p in parts for r in p.ranges]
    assert len(ranges) == PARTITIONS
    assert ranges[0][1] is None
    assert ranges[-1][2] is None
    assert all(a[2] == b[1] for a, b in itertools.pairwise(ranges))

    # Every partition read: the union is the table, each row once, in about equal shares.
    seen: list[str] = []
    sizes = []
    for part in parts:
        read = [k for batch in reader.read(part) for k in batch.column("name").to_pylist()]
        sizes.append(len(read))
        seen += read
    assert len(seen) == len(table_keys) == ROWS
    assert set(seen) == set(table_keys)
    assert max(sizes) <= 2 * ROWS / PARTITIONS
    assert min(sizes) >= ROWS / PARTITIONS / 2
