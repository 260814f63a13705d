"""`time(n)` reads as STRING `HH:MM:SS.fffffff`, seven digits, on every backend (docs/source.md).

Oracle: Microsoft's time page, https://learn.microsoft.com/en-us/sql/t-sql/data-types/time-transact-sql:
the string literal format hh:mm:ss[.nnnnnnn], up to seven fractional digits with an accuracy of
100 nanoseconds; time(3) keeps three of them and time(0) none. The expected strings below are
the written values with their digits padded to seven, written by hand, never read from the
emulator. The values go in over TDS as literals: a Python time stops at microseconds, so the
seventh digit could not be written otherwise (decision 1347).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pymssql
import pytest

from mssql_cdc.core import lsn
from mssql_cdc.emulator import Emulator
from mssql_cdc.sqlserver.backend_choice import Backend
from mssql_cdc.sqlserver.metadata import ReadColumn
from tests.unit.support.tds_emulator import backend_over

BACKENDS = ["emulator", "pymssql", "mssql-python"]
COLUMNS = {"id": "int", "t7": "time(7)", "t3": "time(3)", "t0": "time(0)"}
READ = (
    ReadColumn("id", "INT", "int"),
    ReadColumn("t7", "STRING", "time"),
    ReadColumn("t3", "STRING", "time"),
    ReadColumn("t0", "STRING", "time"),
)
WRITTEN = "(1, '12:34:56.1234567', '12:34:56.123', '12:34:56')"
EXPECTED = {"id": 1, "t7": "12:34:56.1234567", "t3": "12:34:56.1230000", "t0": "12:34:56.0000000"}


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("clock") / "clock.db"
    emu = Emulator.create(path, start="2026-09-28T13:50:00")
    try:
        emu.create_table("dbo.clock", COLUMNS, primary_key="id")
        emu.enable_cdc("dbo.clock")
        with emu.serve() as srv:
            conn = pymssql.connect(**srv.connect_kwargs("pymssql"), login_timeout=10, timeout=10)
            try:
                conn.cursor().execute(f"INSERT INTO dbo.clock (id, t7, t3, t0) VALUES {WRITTEN}")
                conn.commit()
            finally:
                conn.close()
    finally:
        emu.close()
    return path


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, path: Path) -> Iterator[Backend]:
    with backend_over(path, request.param, "dbo_clock") as opened:
        yield opened


def _rows(batches: Iterator[pa.RecordBatch]) -> list[dict[str, object]]:
    table = pa.Table.from_batches(list(batches))
    return [{k: row[k] for k in COLUMNS} for row in table.to_pylist()]


def test_a_snapshot_reads_time_as_seven_fractional_digits(backend: Backend) -> None:
    batches = backend.snapshots.read_table(
        "dbo", "clock", columns=READ, keys=["id"], lo=None, hi=None, batch_rows=10
    )
    assert _rows(batches) == [EXPECTED]


def test_a_change_row_reads_time_as_seven_fractional_digits(backend: Backend) -> None:
    low, high = backend.changes.min_lsn("dbo_clock"), backend.changes.max_lsn()
    assert low is not None
    assert high is not None
    batches = backend.changes.read_changes(
        "dbo_clock",
        low,
        lsn.Lsn(high),
        columns=READ,
        include_command_id=False,
        time_zone="UTC",
        batch_rows=10,
        null_columns=(),
    )
    assert _rows(batches) == [EXPECTED]
