"""What planning a full snapshot of a 1,000,000-row table costs the server (decisions 1411,
1412), on every backend: a few thousand rows read at most, by seeks, never a scan of the table.

The oracles are plain Python: the keys the test inserted (`KEYS`), and how many of them fall in
a partition's range. The emulator's counts of the rows its reads stepped over are the measure.
"""

from __future__ import annotations

import itertools
from bisect import bisect_left
from pathlib import Path

import pytest

from mssql_cdc.emulator import Emulator, io_statistics, reset_io_statistics
from mssql_cdc.options.config import SourceConfig
from mssql_cdc.source.snapshot_format import CdcSnapshotReader, SnapshotPartition
from mssql_cdc.sqlserver.metadata import ReadColumn
from tests.spark.support.backends import BACKENDS, Backend, backend_options

ROWS = 1_000_000
KEYS = [7 * i - 5_000 for i in range(ROWS)]  # bigint keys, ascending
PARTITIONS = 16
COLUMNS = [ReadColumn("k", "BIGINT"), ReadColumn("v", "INT")]


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """dbo.big with ROWS rows, inserted in a few large transactions before CDC is enabled."""
    emu = Emulator.create(tmp_path_factory.mktemp("big") / "e.db")
    emu.create_table("dbo.big", {"k": "bigint", "v": "int"}, primary_key="k")
    step = 200_000
    for start in range(0, ROWS, step):
        emu.commit([("insert", "dbo.big", {"k": k, "v": 1}) for k in KEYS[start : start + step]])
    emu.enable_cdc("dbo.big")
    path = emu.path
    emu.close()
    return path


def _plan(path: Path, backend: Backend) -> tuple[CdcSnapshotReader, list[SnapshotPartition]]:
    config = SourceConfig.from_options(
        {"captureInstance": "dbo_big", **backend_options(path, backend)}
    )
    reader = CdcSnapshotReader(config, COLUMNS, PARTITIONS)
    return reader, list(reader.partitions())  # type: ignore[arg-type]


def _in_range(lo: object, hi: object) -> int:
    """How many of KEYS lie in [lo, hi), an open end None."""
    start = 0 if lo is None else bisect_left(KEYS, int(str(lo)))
    end = len(KEYS) if hi is None else bisect_left(KEYS, int(str(hi)))
    return end - start


@pytest.mark.parametrize("backend", BACKENDS)
def test_planning_a_million_row_snapshot_reads_a_few_rows_by_seeks(
    big: Path, backend: Backend
) -> None:
    reset_io_statistics(big)
    reader, parts = _plan(big, backend)
    cost = io_statistics(big)["dbo.big"]
    assert cost.scans == 0
    assert cost.rows_read <= 2_000  # measured: 65 seeks of one row each at most
    ranges = [r for p in parts for r in p.ranges]
    assert len(ranges) == PARTITIONS
    # The ranges tile the key space: open at both ends, each starting where the last ended.
    assert ranges[0][1] is None
    assert ranges[-1][2] is None
    assert all(a[2] == b[1] for a, b in itertools.pairwise(ranges))
    assert sum(_in_range(lo, hi) for _, lo, hi in ranges) == ROWS

    # A partition's read seeks to its own range and reads only its rows. Over T-SQL the range
    # `lo <= k < hi` is two seekable pieces, `k = lo` and `lo < k < hi` (UNION ALL), so two seeks.
    middle = parts[PARTITIONS // 2]
    [(_, lo, hi)] = middle.ranges
    reset_io_statistics(big)
    read = sum(batch.num_rows for batch in reader.read(middle))
    assert read == _in_range(lo, hi) > 0
    cost = io_statistics(big)["dbo.big"]
    assert cost.scans == 0
    assert cost.seeks == (1 if backend == "emulator" else 2)
    assert cost.rows_read == read


def test_the_partitions_read_in_process_give_every_key_once(big: Path) -> None:
    reader, parts = _plan(big, "emulator")
    seen: list[int] = []
    for part in parts:
        for batch in reader.read(part):
            seen += batch.column("k").to_pylist()
    assert len(seen) == ROWS
    assert seen == KEYS  # each once, and in key order partition after partition
