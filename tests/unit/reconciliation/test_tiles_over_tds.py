"""The T-SQL tile queries over the emulator's TDS front end, through each real driver.

The T-SQL backend's TileHasher asks the server for HASHBYTES sums (decision 1100); the oracle is
the definition itself, `row_digest` in plain Python over the emulator's rows, and the emulator
backend's in-process hasher on the same file must agree with both. Connections stay on
127.0.0.1.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytds
import pytest

from mssql_cdc.core.row_digest import TileDigest, row_digest
from mssql_cdc.emulator import Emulator, TdsServer
from mssql_cdc.options.config import SourceConfig
from mssql_cdc.reconciliation.source_side import SourceAsOf, SourceTable
from mssql_cdc.sqlserver.backend_choice import Backend, open_backend
from mssql_cdc.sqlserver.metadata import ReadColumn
from mssql_cdc.sqlserver.tsql.drivers import Session
from mssql_cdc.sqlserver.tsql.snapshot_backend import TsqlSnapshotReader
from mssql_cdc.sqlserver.tsql.tiles import TsqlTileHasher

COLUMNS = {
    "id": ("int", "INT"),
    "big": ("bigint", "BIGINT"),
    "amount": ("decimal(12,3)", "DECIMAL(12,3)"),
    "name": ("varchar(40)", "STRING"),
    "label": ("nvarchar(40)", "STRING"),
    "paid": ("bit", "BOOLEAN"),
    "day": ("date", "DATE"),
    "placed_at": ("datetime2(7)", "TIMESTAMP_NTZ"),
    "seen_at": ("datetimeoffset(3)", "TIMESTAMP"),
}
READ = tuple(ReadColumn(n, spark, sql.split("(")[0]) for n, (sql, spark) in COLUMNS.items())
NAMES = [c.name for c in READ]
RANGES: list[tuple[Any, Any]] = [(None, None), (None, 4), (4, 9), (9, None), (100, 200)]


def _row(i: int) -> dict[str, Any]:
    if i % 4 == 0:  # every column NULL but the key
        return {"id": i} | {n: None for n in NAMES[1:]}
    return {
        "id": i,
        "big": -(2**62) + i if i % 2 else 2**62 - i,
        "amount": Decimal(f"-{i}.0{i}") if i % 3 else Decimal(f"{i * 1000}.500"),
        "name": f"row {i}",
        "label": f"K\u00f8benhavn {i} \u65e5\u672c \U0001f600",
        "paid": i % 2 == 0,
        "day": date(2026, 1, i),
        "placed_at": datetime(2026, 1, i, 3, 4, 5, 123456),
        "seen_at": datetime(2026, 1, i, 3, 4, 5, 125000, tzinfo=timezone(timedelta(hours=2))),
    }


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    path = tmp_path_factory.mktemp("tiles") / "shop.db"
    emu = Emulator.create(path, start="2026-09-28T13:50:00")
    emu.create_table("dbo.t", {n: sql for n, (sql, _) in COLUMNS.items()}, primary_key="id")
    emu.enable_cdc("dbo.t")
    emu.commit([("insert", "dbo.t", _row(i)) for i in range(1, 13)])
    try:
        yield emu
    finally:
        emu.close()


@pytest.fixture(scope="module")
def server(emulator: Emulator) -> Iterator[TdsServer]:
    with emulator.serve() as srv:
        yield srv


def _backend(options: dict[str, str]) -> Iterator[Backend]:
    backend = open_backend(SourceConfig.from_options({"captureInstance": "dbo_t", **options}))
    try:
        yield backend
    finally:
        backend.close()


@pytest.fixture
def in_process(emulator: Emulator) -> Iterator[Backend]:
    yield from _backend({"backend": "emulator", "emulatorPath": str(emulator.path)})


@pytest.fixture(params=["pymssql", "python-tds", "mssql-python"])
def wire(request: pytest.FixtureRequest, server: TdsServer) -> Iterator[TsqlTileHasher]:
    """The T-SQL TileHasher over one driver. python-tds is no backend choice, so its session is
    opened here as the backend opens pymssql's (same parameter style)."""
    if request.param != "python-tds":
        options = {"connectionString": server.connection_string(request.param)}
        for backend in _backend({"backend": request.param, **options}):
            assert isinstance(backend.tiles, TsqlTileHasher)
            yield backend.tiles
        return
    conn = pytds.connect(**server.connect_kwargs("python-tds"), timeout=10, login_timeout=10)
    session = Session(conn, "pyformat", arrow=False)
    try:
        reader = TsqlSnapshotReader(session, isolation="readCommitted", lock_timeout_ms=None)
        yield TsqlTileHasher(session, reader)
    finally:
        session.close()


def _canonical(v: Any) -> Any:
    """An instant is compared in UTC (decision 1100); every other value as it is."""
    return v.astimezone(UTC) if isinstance(v, datetime) and v.tzinfo is not None else v


def _expected(rows: list[dict[str, Any]], lo: Any, hi: Any) -> dict[tuple[object, ...], int]:
    """Decision 1100's digest per key of the range, from the rows' Python values."""
    return {
        (r["id"],): row_digest([_canonical(r[n]) for n in NAMES])
        for r in rows
        if (lo is None or r["id"] >= lo) and (hi is None or r["id"] < hi)
    }


def test_range_digests_over_each_driver_are_the_definitions_and_the_in_process_ones(
    emulator: Emulator, wire: TsqlTileHasher, in_process: Backend
) -> None:
    rows = emulator.rows("dbo.t")
    expected = [TileDigest.of(_expected(rows, lo, hi).values()) for lo, hi in RANGES]
    assert [d.rows for d in expected] == [12, 3, 5, 4, 0]
    assert wire.range_digests("dbo", "t", columns=READ, keys=["id"], ranges=RANGES) == expected
    found = in_process.tiles.range_digests("dbo", "t", columns=READ, keys=["id"], ranges=RANGES)
    assert found == expected


def test_key_digests_over_each_driver_are_the_definitions_and_the_in_process_ones(
    emulator: Emulator, wire: TsqlTileHasher, in_process: Backend
) -> None:
    rows = emulator.rows("dbo.t")
    for lo, hi in RANGES:
        expected = _expected(rows, lo, hi)
        assert wire.key_digests("dbo", "t", columns=READ, keys=["id"], lo=lo, hi=hi) == expected
        found = in_process.tiles.key_digests("dbo", "t", columns=READ, keys=["id"], lo=lo, hi=hi)
        assert found == expected


def test_a_change_of_case_alone_changes_the_digest_over_the_wire(
    emulator: Emulator, wire: TsqlTileHasher
) -> None:
    """The server's collation calls 'ROW 1' and 'row 1' equal; the digest must not."""
    before = wire.key_digests("dbo", "t", columns=READ, keys=["id"], lo=1, hi=2)
    emulator.commit([("update", "dbo.t", {"id": 1, "name": "ROW 1"})])
    try:
        after = wire.key_digests("dbo", "t", columns=READ, keys=["id"], lo=1, hi=2)
        expected = _expected(emulator.rows("dbo.t"), 1, 2)
    finally:
        emulator.commit([("update", "dbo.t", {"id": 1, "name": "row 1"})])
    assert after == expected
    assert after[(1,)] != before[(1,)]


def test_the_source_side_as_of_an_lsn_reads_through_the_tsql_backend(
    emulator: Emulator, server: TdsServer
) -> None:
    """reconcile()'s source side over pymssql: changes after `at` are taken back out."""
    emulator.commit([("update", "dbo.t", {"id": 2, "name": "at the lsn"})])
    at = emulator.max_lsn()
    assert at is not None
    then = emulator.rows("dbo.t")  # the oracle: the table at `at`
    emulator.commit([("delete", "dbo.t", {"id": 3})])
    emulator.commit([("update", "dbo.t", {"id": 2, "name": "after the lsn"})])
    emulator.commit([("insert", "dbo.t", _row(13) | {"id": 50})])
    options = {"backend": "pymssql", "connectionString": server.connection_string("pymssql")}
    try:
        for backend in _backend(options):
            side = SourceAsOf(
                SourceTable("dbo_t", "dbo", "t", READ, ("id",)),
                at,
                tiles=backend.tiles,
                chunks=backend.chunks,
                changes=backend.changes,
            )
            ranges: list[tuple[Any, Any]] = [(None, 3), (3, None)]
            assert side.digests(ranges) == [
                TileDigest.of(_expected(then, lo, hi).values()) for lo, hi in ranges
            ]
            assert side.keyed((None, None)) == _expected(then, None, None)
    finally:
        emulator.commit(
            [
                ("delete", "dbo.t", {"id": 50}),
                ("insert", "dbo.t", _row(3)),
                ("update", "dbo.t", {"id": 2, "name": _row(2)["name"]}),
            ]
        )


@pytest.mark.parametrize("below", [2**62, 3 * 2**62], ids=["quarter", "three-quarters"])
def test_a_sampled_read_over_each_driver_keeps_the_keys_whose_key_digest_is_below_the_bound(
    emulator: Emulator, wire: TsqlTileHasher, in_process: Backend, below: int
) -> None:
    """The sample is decision 1376's: the row digest of the key alone, unsigned, below the
    bound; the bound above 2**63 checks the signed reading of the server's bigint."""
    rows = emulator.rows("dbo.t")
    sampled = [r for r in rows if row_digest([r["id"]]) < below]
    assert 0 < len(sampled) < len(rows)
    for lo, hi in RANGES:
        expected = _expected(sampled, lo, hi)
        for side in (wire, in_process.tiles):
            found = side.key_digests(
                "dbo", "t", columns=READ, keys=["id"], lo=lo, hi=hi, sample_below=below
            )
            assert found == expected
    digests = [TileDigest.of(_expected(sampled, lo, hi).values()) for lo, hi in RANGES]
    for side in (wire, in_process.tiles):
        found_ranges = side.range_digests(
            "dbo", "t", columns=READ, keys=["id"], ranges=RANGES, sample_below=below
        )
        assert found_ranges == digests
