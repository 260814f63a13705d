"""A `datetime2(7)` or `datetimeoffset(7)` declared STRING reads as CONVERT's seven-digit text on
every backend, so values 100 ns apart stay apart (docs/source.md, 'Types').

Oracle: Microsoft's CAST and CONVERT page,
https://learn.microsoft.com/en-us/sql/t-sql/functions/cast-and-convert-transact-sql: datetime2
and datetimeoffset convert to character data as `yyyy-mm-dd hh:mi:ss.nnnnnnn`, a
datetimeoffset followed by its offset `+hh:mi`; and the datetime2 page,
https://learn.microsoft.com/en-us/sql/t-sql/data-types/datetime2-transact-sql: 0001-01-01
through 9999-12-31 23:59:59.9999999, accuracy 100 ns. The expected strings are the written
values, typed by hand. Rows 1-4 go in over TDS as literals (a Python datetime stops at
microseconds, so the seventh digit could not be written otherwise; a literal without an offset
is a datetimeoffset at +00:00). Row 5's datetimeoffset is a Python datetime at +02:00, which
reads at +00:00 two hours earlier: the emulator keeps the instant only (docs/emulator.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
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
COLUMNS = {"id": "int", "d7": "datetime2(7)", "o7": "datetimeoffset(7)"}
READ = (
    ReadColumn("id", "INT", "int"),
    ReadColumn("d7", "STRING", "datetime2", "datetime2(7)"),
    ReadColumn("o7", "STRING", "datetimeoffset", "datetimeoffset(7)"),
)
WRITTEN = [
    "(1, '0001-01-01 00:00:00.0000001', '2026-09-28 13:50:00.1234567')",
    "(2, '2026-09-28 13:50:00.1234567', '2026-09-28 13:50:00.1234568')",
    "(3, '2026-09-28 13:50:00.1234568', '0001-01-01 00:00:00.0000001')",
    "(4, '9999-12-31 23:59:59.9999999', '9999-12-31 23:59:59.9999999')",
]
PLUS_TWO = timezone(timedelta(hours=2))
WRITTEN_FROM_PYTHON = {
    "id": 5,
    "d7": datetime(2026, 9, 28, 13, 50, 0, 123456),
    "o7": datetime(2026, 9, 28, 15, 50, 0, 123456, tzinfo=PLUS_TWO),
}
EXPECTED = [
    {"id": 1, "d7": "0001-01-01 00:00:00.0000001", "o7": "2026-09-28 13:50:00.1234567 +00:00"},
    {"id": 2, "d7": "2026-09-28 13:50:00.1234567", "o7": "2026-09-28 13:50:00.1234568 +00:00"},
    {"id": 3, "d7": "2026-09-28 13:50:00.1234568", "o7": "0001-01-01 00:00:00.0000001 +00:00"},
    {"id": 4, "d7": "9999-12-31 23:59:59.9999999", "o7": "9999-12-31 23:59:59.9999999 +00:00"},
    {"id": 5, "d7": "2026-09-28 13:50:00.1234560", "o7": "2026-09-28 13:50:00.1234560 +00:00"},
]


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("stamps") / "stamps.db"
    emu = Emulator.create(path, start="2026-09-28T13:50:00")
    try:
        emu.create_table("dbo.stamps", COLUMNS, primary_key="id")
        emu.enable_cdc("dbo.stamps")
        with emu.serve() as srv:
            conn = pymssql.connect(**srv.connect_kwargs("pymssql"), login_timeout=10, timeout=10)
            try:
                values = ", ".join(WRITTEN)
                conn.cursor().execute(f"INSERT INTO dbo.stamps (id, d7, o7) VALUES {values}")
                conn.commit()
            finally:
                conn.close()
        emu.commit([("insert", "dbo.stamps", WRITTEN_FROM_PYTHON)])
    finally:
        emu.close()
    return path


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, path: Path) -> Iterator[Backend]:
    with backend_over(path, request.param, "dbo_stamps") as opened:
        yield opened


def _rows(batches: Iterator[pa.RecordBatch]) -> list[dict[str, object]]:
    table = pa.Table.from_batches(list(batches))
    return [{k: row[k] for k in COLUMNS} for row in table.to_pylist()]


def test_a_snapshot_reads_datetime2_and_datetimeoffset_declared_string_as_seven_digits(
    backend: Backend,
) -> None:
    batches = backend.snapshots.read_table(
        "dbo", "stamps", columns=READ, keys=["id"], lo=None, hi=None, batch_rows=10
    )
    assert _rows(batches) == EXPECTED


def test_a_change_row_reads_datetime2_and_datetimeoffset_declared_string_as_seven_digits(
    backend: Backend,
) -> None:
    low, high = backend.changes.min_lsn("dbo_stamps"), backend.changes.max_lsn()
    assert low is not None
    assert high is not None
    batches = backend.changes.read_changes(
        "dbo_stamps",
        low,
        lsn.Lsn(high),
        columns=READ,
        include_command_id=False,
        time_zone="UTC",
        batch_rows=10,
        null_columns=(),
    )
    assert _rows(batches) == EXPECTED
