"""The T-SQL backends end to end: pymssql and mssql-python against the emulator's TDS server.

Both backends are opened with `open_backend(SourceConfig)` as the source opens them, with the
server's own connection string; every Protocol method is compared with the in-process
emulator backend on the same file, which is the oracle. Connections stay on 127.0.0.1.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from itertools import pairwise
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from mssql_cdc.core import lsn
from mssql_cdc.core.ranges import split_piece
from mssql_cdc.emulator import Emulator, TdsServer
from mssql_cdc.options.config import SourceConfig
from mssql_cdc.options.declared_columns import KeyBound
from mssql_cdc.sqlserver.backend_choice import Backend, open_backend
from mssql_cdc.sqlserver.metadata import ReadColumn
from tests.unit.support.emulator_oracle import at

DRIVERS = ["pymssql", "mssql-python"]

COLUMNS = {
    "order_id": ("int", "INT"),
    "status": ("nvarchar(20)", "STRING"),
    "amount": ("decimal(18,2)", "DECIMAL(18,2)"),
    "paid": ("bit", "BOOLEAN"),
    "qty": ("smallint", "SMALLINT"),
    "total_cents": ("bigint", "BIGINT"),
    "code": ("binary(4)", "BINARY"),
    "placed_at": ("datetime2(3)", "TIMESTAMP_NTZ"),
    "weight": ("float", "DOUBLE"),
    "note": ("varchar(max)", "STRING"),
}
READ = tuple(ReadColumn(name, spark, sql.split("(")[0]) for name, (sql, spark) in COLUMNS.items())


@dataclass(frozen=True)
class Scenario:
    path: Path
    commits: list[lsn.Lsn]  # every commit and idle LSN, in order
    instances: tuple[str, str]  # the first instance, and the second made after a DDL


def _order(i: int, **changed: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "order_id": i,
        "status": f"new-{i}",
        "amount": Decimal(f"{i}.25"),
        "paid": i % 2 == 0,
        "qty": i * 3,
        "total_cents": 10_000_000_000 + i,
        "code": bytes([i, 0, 255, 7]),
        "placed_at": datetime(2026, 9, 28, 10, i, 0, 125000),
        "weight": i / 8,
        "note": "x" * (i * 1000),  # up to 9000 characters: past 8000, so sent as (max)
    }
    return {**row, **changed}


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    path = tmp_path_factory.mktemp("tds") / "shop.db"
    emu = Emulator.create(path, start="2026-09-28T13:50:00")
    emu.create_table(
        "dbo.orders", {n: sql for n, (sql, _) in COLUMNS.items()}, primary_key="order_id"
    )
    emu.create_table("dbo.idle", {"id": "int"}, primary_key="id")
    first = emu.enable_cdc("dbo.orders")
    emu.enable_cdc("dbo.idle")  # an instance with no change row
    commits = [
        emu.commit([("insert", "dbo.orders", _order(i)) for i in range(1, 8)], at=at(0)),
        emu.commit(
            [
                ("update", "dbo.orders", {"order_id": 2, "status": "paid", "paid": True}),
                ("insert", "dbo.orders", _order(8, status=None, amount=None, note=None)),
            ],
            at=at(10),
        ),
        emu.commit([("delete", "dbo.orders", {"order_id": 3})], at=at(20)),
        emu.idle(at=at(30)),
    ]
    emu.add_column("dbo.orders", "channel", "varchar(10)", at=at(40))
    second = emu.enable_cdc("dbo.orders", capture_instance="dbo_orders_v2")
    commits += [
        emu.commit([("update", "dbo.orders", {"order_id": 8, "channel": "web"})], at=at(50)),
        emu.commit([("insert", "dbo.orders", _order(9, channel="shop"))], at=at(60)),
        emu.idle(at=at(70)),
    ]
    emu.close()
    return Scenario(path, [lsn.Lsn(c) for c in commits], (first, second))


@pytest.fixture(scope="module")
def server(scenario: Scenario) -> Iterator[TdsServer]:
    emu = Emulator.open(scenario.path)
    try:
        with emu.serve() as srv:
            yield srv
    finally:
        emu.close()


def _open(options: dict[str, str]) -> Iterator[Backend]:
    backend = open_backend(SourceConfig.from_options({"captureInstance": "dbo_orders", **options}))
    try:
        yield backend
    finally:
        backend.close()


@pytest.fixture(params=DRIVERS)
def wire(request: pytest.FixtureRequest, server: TdsServer) -> Iterator[Backend]:
    """The T-SQL backend of one driver, over the wire."""
    driver = request.param
    yield from _open({"backend": driver, "connectionString": server.connection_string(driver)})


@pytest.fixture
def oracle(scenario: Scenario) -> Iterator[Backend]:
    """The in-process emulator backend on the same file."""
    yield from _open({"backend": "emulator", "emulatorPath": str(scenario.path)})


def _probes(scenario: Scenario) -> list[lsn.Lsn]:
    """Each commit LSN, the LSNs on either side of it, and both ends of the LSN space."""
    around = [lsn.increment(c) for c in scenario.commits]
    around += [lsn.decrement(c) for c in scenario.commits]
    return [lsn.ZERO, *scenario.commits, *around, lsn.Lsn("0x" + "FF" * 10)]


def test_max_and_min_lsn_are_the_in_process_ones(
    scenario: Scenario, wire: Backend, oracle: Backend
) -> None:
    assert wire.planner.max_lsn() == oracle.planner.max_lsn() == scenario.commits[-1]
    assert wire.changes.max_lsn() == oracle.changes.max_lsn()
    for instance in (*scenario.instances, "dbo_idle", "no_such_instance"):
        assert wire.planner.min_lsn(instance) == oracle.planner.min_lsn(instance), instance
        assert wire.changes.min_lsn(instance) == oracle.changes.min_lsn(instance), instance


def test_commit_times_are_the_in_process_ones(
    scenario: Scenario, wire: Backend, oracle: Backend
) -> None:
    for probe in _probes(scenario):
        expected = oracle.planner.commit_time(probe, "UTC")
        assert wire.planner.commit_time(probe, "UTC") == expected, probe
        assert wire.changes.commit_time(probe, "UTC") == expected, probe


def test_nth_commit_after_is_the_in_process_one(
    scenario: Scenario, wire: Backend, oracle: Backend
) -> None:
    for probe in _probes(scenario):
        for n in (1, 2, 5, 100):
            assert wire.planner.nth_commit_after(probe, n) == oracle.planner.nth_commit_after(
                probe, n
            ), (probe, n)


@pytest.mark.parametrize("tiles", [1, 2, 3, 4, 50])
def test_split_tiles_plan_the_same_rows_as_in_process_without_splitting_a_commit(
    scenario: Scenario, wire: Backend, oracle: Backend, tiles: int
) -> None:
    """NTILE over rows and the emulator's commit-aligned bounds may put a bound on different
    commits (spec 10 section 5.3 lets the source merge either); what both must give is the same
    rows, and ranges that cover the piece and end on commits."""
    last = scenario.commits[-1]
    commits = set(scenario.commits)
    for instance in (*scenario.instances, "dbo_idle"):
        first = max(scenario.commits[0], oracle.planner.min_lsn(instance) or lsn.ZERO)
        found = wire.planner.split_points(instance, first, last, tiles)
        expected = oracle.planner.split_points(instance, first, last, tiles)
        assert sum(t.rows for t in found) == sum(t.rows for t in expected), instance
        assert len(found) <= tiles
        ranges = split_piece(first, last, found, min_rows=1)
        assert ranges[0][0] == first
        assert ranges[-1][1] == last
        for (_, end), (start, _) in pairwise(ranges):
            assert end in commits, (instance, end)
            assert start == lsn.increment(end)


def test_the_capture_catalog_answers_as_in_process(
    scenario: Scenario, wire: Backend, oracle: Backend
) -> None:
    def by_name(found: Any) -> list[Any]:  # across tables the order is not part of the contract
        return sorted(found, key=lambda ci: ci.name)

    assert by_name(wire.catalog.capture_instances()) == by_name(oracle.catalog.capture_instances())
    assert wire.catalog.capture_instances("dbo", "orders") == oracle.catalog.capture_instances(
        "dbo", "orders"
    )
    assert [ci.name for ci in wire.catalog.capture_instances("dbo", "orders")] == list(
        scenario.instances
    )
    last = scenario.commits[-1]
    for instance in (*scenario.instances, "dbo_idle"):
        assert wire.catalog.captured_columns(instance) == oracle.catalog.captured_columns(instance)
        assert wire.catalog.ddl_history(instance, lsn.ZERO, last) == (
            oracle.catalog.ddl_history(instance, lsn.ZERO, last)
        )
        assert wire.catalog.change_table_access(instance) == (
            oracle.catalog.change_table_access(instance)
        )
    assert wire.catalog.ddl_history(scenario.instances[0], lsn.ZERO, last)  # the DDL is seen


@pytest.mark.parametrize("setting", ["UTC", "auto"])
def test_time_zones_resolve_as_in_process(wire: Backend, oracle: Backend, setting: str) -> None:
    assert wire.catalog.resolve_time_zone(setting) == oracle.catalog.resolve_time_zone(setting)


def _changes(backend: Backend, instance: str, *, command_id: bool, columns: Any) -> pa.Table:
    low, high = backend.changes.min_lsn(instance), backend.changes.max_lsn()
    assert low is not None
    assert high is not None
    batches = backend.changes.read_changes(
        instance,
        low,
        high,
        columns=columns,
        include_command_id=command_id,
        time_zone="UTC",
        batch_rows=3,
        null_columns=("channel",) if instance == "dbo_orders" else (),
    )
    return pa.Table.from_batches(list(batches))


@pytest.mark.parametrize("command_id", [False, True])
def test_change_rows_are_the_in_process_arrow_table(
    scenario: Scenario, wire: Backend, oracle: Backend, command_id: bool
) -> None:
    columns = (*READ, ReadColumn("channel", "STRING", "varchar"))
    for instance in scenario.instances:
        got = _changes(wire, instance, command_id=command_id, columns=columns)
        expected = _changes(oracle, instance, command_id=command_id, columns=columns)
        assert got.num_rows > 0
        assert got.equals(expected), instance


def test_session_stats_are_read_over_the_wire(wire: Backend) -> None:
    # Nothing to compare with in process (no network); the statements must still run.
    stats = wire.changes.session_stats()
    assert stats.rtt_ms >= 0
    assert stats.network_wait_ms is None or stats.network_wait_ms >= 0


def _text(bound: KeyBound) -> Any:
    """A key bound as the T-SQL backend holds it: server-made text (tuples for composite keys)."""
    if bound is None or isinstance(bound, str):
        return bound
    if isinstance(bound, tuple):
        return tuple(_text(part) for part in bound)
    return str(bound)


def test_snapshot_planning_answers_as_in_process(wire: Backend, oracle: Backend) -> None:
    got = wire.snapshots.table_columns("dbo", "orders")
    expected = oracle.snapshots.table_columns("dbo", "orders")
    assert [(c.name, c.column_id, c.sql_type, c.is_computed) for c in got] == [
        (c.name, c.column_id, c.sql_type, c.is_computed) for c in expected
    ]
    assert wire.snapshots.key_extent("dbo", "orders", "order_id") == (
        oracle.snapshots.key_extent("dbo", "orders", "order_id")
    )
    assert wire.snapshots.key_extent("dbo", "idle", "id") is None
    for n in (1, 2, 3, 20):
        assert list(wire.snapshots.key_tiles("dbo", "orders", ["order_id"], n)) == [
            _text(b) for b in oracle.snapshots.key_tiles("dbo", "orders", ["order_id"], n)
        ], n
    for n in (1, 2, 4, 9):  # at most one bucket per key: past that the backends differ
        assert wire.chunks.key_buckets("dbo", "orders", "order_id", n, 1, 10) == (
            oracle.chunks.key_buckets("dbo", "orders", "order_id", n, 1, 10)
        ), n
    for start, inclusive, position in [(None, True, 0), ("2", True, 2), ("4", False, 0)]:
        native = None if start is None else int(start)
        assert wire.chunks.key_at(
            "dbo", "orders", ["order_id"], start, inclusive=inclusive, position=position
        ) == _text(
            oracle.chunks.key_at(
                "dbo", "orders", ["order_id"], native, inclusive=inclusive, position=position
            )
        )
    assert wire.chunks.row_count("dbo", "orders") == oracle.chunks.row_count("dbo", "orders")


def test_snapshot_reads_are_the_in_process_arrow_tables(wire: Backend, oracle: Backend) -> None:
    columns = (*READ, ReadColumn("channel", "STRING", "varchar"))
    for lo, hi in [(None, None), (None, 4), (4, 8), (8, None)]:

        def read(backend: Backend, lo: KeyBound, hi: KeyBound) -> pa.Table:
            batches = backend.snapshots.read_table(
                "dbo", "orders", columns=columns, keys=["order_id"], lo=lo, hi=hi, batch_rows=2
            )
            return pa.Table.from_batches(list(batches))

        got = read(wire, _text(lo), _text(hi))
        # A snapshot read has no ORDER BY (SQL Server promises no order): compared by key.
        expected = read(oracle, lo, hi).sort_by("order_id")
        assert got.sort_by("order_id").equals(expected), (lo, hi)
