"""A full snapshot of a key whose first column is not an integer, planned from the primary
key's statistics histogram (decision 1448), on every backend: the emulator in process and its
TDS server through mssql-python and pymssql.

The oracle of coverage is plain Python: each row carries a number `v` the test gave it, and
the partitions' reads together give each number exactly once. The oracle of cost is the
emulator's count of the rows the plan read: none of the table for a one-column key, one per
bound for a composite key.
"""

from __future__ import annotations

import datetime
import decimal
import logging
import random
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mssql_cdc.emulator import Emulator, io_statistics, reset_io_statistics
from mssql_cdc.options.config import SourceConfig
from mssql_cdc.source.snapshot_format import CdcSnapshotReader, SnapshotPartition
from mssql_cdc.sqlserver.metadata import ReadColumn
from tests.spark.support.backends import BACKENDS, backend_options, stop_servers

ROWS = 3_000
PARTITIONS = 8
RNG = random.Random(11)
KEY_TYPES: dict[str, Callable[[int], object]] = {
    "uniqueidentifier": lambda i: uuid.UUID(int=RNG.getrandbits(128)),
    "datetime2(6)": lambda i: (
        datetime.datetime(2020, 1, 1) + datetime.timedelta(microseconds=RNG.getrandbits(40))
    ),
    "decimal(18,4)": lambda i: decimal.Decimal(RNG.getrandbits(40)) / 10_000,
    "varbinary(16)": lambda i: RNG.getrandbits(64).to_bytes(8, "big"),
    "date": lambda i: datetime.date(1900, 1, 1) + datetime.timedelta(days=3 * i),
    "varchar(20) COLLATE Latin1_General_CI_AS": lambda i: ("Ab" if i % 2 else "aB") + f"{i:05d}",
}


@pytest.fixture(autouse=True)
def _servers() -> Iterator[None]:
    yield
    stop_servers()


def keyed_table(path: Path, sql_type: str, make: Callable[[int], object]) -> None:
    emu = Emulator.create(path)
    emu.create_table("dbo.x", {"k": sql_type, "v": "int"}, primary_key="k")
    keys = list(dict.fromkeys(make(i) for i in range(ROWS)))
    assert len(keys) == ROWS
    emu.commit([("insert", "dbo.x", {"k": k, "v": i}) for i, k in enumerate(keys)])
    emu.enable_cdc("dbo.x")
    emu.update_statistics("dbo.x")
    emu.close()


def plan(
    path: Path, backend: str, **extra: str
) -> tuple[CdcSnapshotReader, list[SnapshotPartition]]:
    chosen = backend_options(path, backend)  # type: ignore[arg-type]
    config = SourceConfig.from_options({"captureInstance": "dbo_x", **chosen, **extra})
    reader = CdcSnapshotReader(config, [ReadColumn("v", "INT")], PARTITIONS)
    return reader, list(reader.partitions())  # type: ignore[arg-type]


def numbers_read(reader: CdcSnapshotReader, parts: list[SnapshotPartition]) -> Counter[int]:
    return Counter(v for p in parts for b in reader.read(p) for v in b.column("v").to_pylist())


@pytest.mark.parametrize("sql_type", list(KEY_TYPES))
def test_a_non_integer_key_is_cut_by_the_histogram_reading_no_row_of_the_table(
    tmp_path: Path, sql_type: str
) -> None:
    path = tmp_path / "e.db"
    keyed_table(path, sql_type, KEY_TYPES[sql_type])
    for backend in BACKENDS:
        reset_io_statistics(path)
        reader, parts = plan(path, backend)
        assert "dbo.x" not in io_statistics(path), backend
        assert len(parts) == PARTITIONS
        read = numbers_read(reader, parts)
        assert read == Counter(range(ROWS)), backend
        shares = [sum(1 for b in reader.read(p) for _ in range(b.num_rows)) for p in parts]
        assert max(shares) - min(shares) <= ROWS / PARTITIONS / 2, backend


def test_a_composite_character_led_key_seeks_one_row_per_bound(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    emu = Emulator.create(path)
    emu.create_table("dbo.x", {"a": "nvarchar(10)", "b": "int", "v": "int"}, primary_key=["a", "b"])
    rows = [(f"n{i % 500:04d}", i) for i in range(ROWS)]
    emu.commit([("insert", "dbo.x", {"a": a, "b": b, "v": b}) for a, b in rows])
    emu.enable_cdc("dbo.x")
    emu.update_statistics("dbo.x")
    emu.close()
    for backend in BACKENDS:
        reset_io_statistics(path)
        reader, parts = plan(path, backend)
        cost = io_statistics(path)["dbo.x"]
        assert (cost.scans, cost.seeks, cost.rows_read) == (0, PARTITIONS - 1, PARTITIONS - 1)
        assert numbers_read(reader, parts) == Counter(range(ROWS)), backend


def test_rows_written_after_the_statistics_are_read_once(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    keyed_table(path, "nvarchar(20)", lambda i: f"m{i:05d}")
    emu = Emulator.open(path)
    # Below, between and above every step; 30 changes stay under the rebuild threshold.
    late = ["a", "m00001x", "m01500x", "z", *[f"zz{j}" for j in range(26)]]
    emu.commit([("insert", "dbo.x", {"k": k, "v": ROWS + i}) for i, k in enumerate(late)])
    emu.close()
    for backend in BACKENDS:
        reader, parts = plan(path, backend)
        assert numbers_read(reader, parts) == Counter(range(ROWS + 30)), backend


def test_without_a_primary_key_the_plan_falls_back_to_ntile_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "e.db"
    emu = Emulator.create(path)
    emu.create_table("dbo.x", {"k": "nvarchar(20)", "v": "int"})  # a heap
    emu.commit([("insert", "dbo.x", {"k": f"h{i:05d}", "v": i}) for i in range(ROWS)])
    emu.enable_cdc("dbo.x")
    emu.close()
    for backend in BACKENDS:
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="mssql_cdc"):
            reader, parts = plan(path, backend, snapshotKeys='["k"]')
        assert "by NTILE, which makes the server sort the whole table" in caplog.text, backend
        assert len(parts) == PARTITIONS
        assert numbers_read(reader, parts) == Counter(range(ROWS)), backend
