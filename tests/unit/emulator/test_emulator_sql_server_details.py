"""SQL Server's details where the emulator exposes them (issue 21 items 2, 4 and 6): a new
instance's NULL start_lsn, binary comparison, error texts and numbers, name and row-filter
trimming, and the shuffled order of reads without ORDER BY.

Oracles: the emulator's own inspection face (stored marks, change rows), plain Python, and
SQL Server's documented texts. Connections stay on 127.0.0.1.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pymssql
import pytest

from mssql_cdc.emulator import (
    ArgumentError,
    Emulator,
    InvalidRangeError,
    TdsServer,
    UnknownObjectError,
)
from mssql_cdc.options.config import SourceConfig
from mssql_cdc.sqlserver.backend_choice import Backend, open_backend
from mssql_cdc.sqlserver.emulated.backend import EmulatorBackend
from mssql_cdc.sqlserver.metadata import ReadColumn
from tests.unit.emulator.test_tds_drivers import server_error
from tests.unit.support.emulator_oracle import at, orders
from tests.unit.support.tds_clients import connect


def rows(
    server: TdsServer, sql: str, params: tuple[object, ...] | None = None
) -> list[tuple[object, ...]]:
    conn = connect(server, "pymssql")
    try:
        cursor = conn.cursor()
        cursor.execute(sql, params)
        return list(cursor.fetchall())
    finally:
        conn.close()


def wire_error(
    server: TdsServer, sql: str, params: tuple[object, ...] | None = None
) -> tuple[int | None, str]:
    with pytest.raises(pymssql.Error) as caught:
        rows(server, sql, params)
    return server_error(caught.value)


@pytest.fixture
def manual(tmp_path: Path) -> Iterator[Emulator]:
    emu = orders(tmp_path / "e.db", capture="manual")
    yield emu
    emu.close()


def test_a_new_instance_shows_start_lsn_null_in_every_read_path_until_capture_reaches_it(
    manual: Emulator,
) -> None:
    manual.commit([("insert", "dbo.orders", {"order_id": 1})], at=at(1))
    mark = manual.min_lsn("dbo_orders")  # the stored mark, the inspection face's oracle
    reader = manual.reader()
    with manual.serve() as server:

        def seen() -> list[object]:
            [info] = reader.capture_instances("dbo.orders")
            [backend] = EmulatorBackend(str(manual.path)).capture_instances("dbo", "orders")
            [(catalog,)] = rows(server, "SELECT start_lsn FROM cdc.change_tables")
            [help_row] = rows(server, "EXEC sys.sp_cdc_help_change_data_capture")
            return [
                info["start_lsn"],
                reader.resolve_instance("dbo_orders")["start_lsn"],
                backend.start_lsn,
                reader.min_lsn("dbo_orders"),
                catalog,
                help_row[5],
            ]

        assert seen() == [None] * 6
        assert manual.capture() is not None  # one cycle reaches the enable point
        binary = bytes.fromhex(mark[2:])
        assert seen() == [mark, mark, mark, mark, binary, binary]


def test_a_cycle_that_stops_below_the_enable_point_leaves_start_lsn_null(
    manual: Emulator,
) -> None:
    manual.configure(maxtrans=1)
    manual.drain()
    below = manual.commit([("insert", "dbo.orders", {"order_id": 1})], at=at(1))
    manual.enable_cdc("dbo.orders", capture_instance="dbo_orders_v2")
    manual.commit([("insert", "dbo.orders", {"order_id": 2})], at=at(2))
    assert manual.capture() == below
    newer = manual.reader().resolve_instance("dbo_orders_v2")
    assert newer["start_lsn"] is None
    assert manual.pending_capture() == 1  # the enable is no transaction: maxtrans skips it
    manual.drain()
    assert manual.reader().resolve_instance("dbo_orders_v2")["start_lsn"] == newer["create_lsn"]


def test_binary_comparison_ignores_trailing_zero_bytes_so_idle_entries_are_not_commits(
    tmp_path: Path,
) -> None:
    emu = orders(tmp_path / "e.db")
    commits = [emu.commit([("insert", "dbo.orders", {"order_id": i})], at=at(i)) for i in range(3)]
    emu.idle(at=at(10))
    emu.idle(at=at(20))
    with emu.serve() as server:
        [(count,)] = rows(server, "SELECT COUNT(*) FROM cdc.lsn_time_mapping WHERE tran_id <> 0x00")
        [(equal, less)] = rows(
            server,
            "SELECT CASE WHEN 0x00 = 0x0000 THEN 1 ELSE 0 END, "
            "CASE WHEN 0x01 < 0x0100 THEN 1 ELSE 0 END",
        )
        groups = rows(server, "SELECT COUNT(*) FROM cdc.lsn_time_mapping GROUP BY tran_id")
    assert count == len(commits)
    assert (equal, less) == (1, 0)  # 0x01 pads to 0x0100: equal, not less
    assert sorted(n for (n,) in groups) == [1, 1, 1, 2]  # both idle entries in one group


def test_a_dropped_instance_gives_sql_servers_208_text_in_process_and_over_tds(
    tmp_path: Path,
) -> None:
    emu = orders(tmp_path / "e.db")
    lsn = emu.commit([("insert", "dbo.orders", {"order_id": 1})], at=at(1))
    emu.disable_cdc("dbo_orders")
    with pytest.raises(UnknownObjectError) as caught:
        emu.reader().read_changes("dbo_orders", lsn, lsn).read_all()
    assert caught.value.number == 208
    assert str(caught.value).startswith(
        "Invalid object name 'cdc.fn_cdc_get_all_changes_dbo_orders'."
    )
    with emu.serve() as server:
        for fn in ("fn_cdc_get_all_changes_dbo_orders", "fn_cdc_get_net_changes_dbo_orders"):
            number, text = wire_error(server, f"SELECT * FROM cdc.{fn}({lsn}, {lsn}, N'all')")
            assert (number, text.strip()) == (208, f"Invalid object name 'cdc.{fn}'.")


def test_a_cleanup_mark_that_is_no_entry_carries_22964_in_process_and_over_tds(
    tmp_path: Path,
) -> None:
    emu = orders(tmp_path / "e.db")
    emu.commit([("insert", "dbo.orders", {"order_id": 1})], at=at(1))
    last = emu.commit([("insert", "dbo.orders", {"order_id": 2})], at=at(2))
    not_an_entry = "0x" + format(int(last, 16) - 1, "020X")
    with pytest.raises(ArgumentError) as caught:
        emu.cleanup("dbo_orders", not_an_entry)
    assert caught.value.number == 22964
    assert isinstance(caught.value, ValueError)
    with emu.serve() as server:
        number, _ = wire_error(
            server,
            "EXEC sys.sp_cdc_cleanup_change_table @capture_instance = 'dbo_orders', "
            f"@low_water_mark = {not_an_entry}",
        )
    assert number == 22964


def test_capture_instance_names_ignore_trailing_spaces_and_nothing_else(tmp_path: Path) -> None:
    emu = orders(tmp_path / "e.db")
    emu.commit([("insert", "dbo.orders", {"order_id": 1})], at=at(1))
    reader = emu.reader()
    mark = reader.min_lsn("dbo_orders")
    assert mark is not None
    assert reader.min_lsn("dbo_orders  ") == mark
    assert reader.min_lsn("dbo_orders\t") == "0x" + "0" * 20  # a tab is part of the name
    with emu.serve() as server:
        [(wire,)] = rows(server, "SELECT sys.fn_cdc_get_min_lsn('dbo_orders ')")
    assert wire == bytes.fromhex(mark[2:])


@pytest.mark.parametrize("padded", ["  all  ", "ALL UPDATE OLD "])
def test_the_row_filter_is_trimmed_of_spaces(tmp_path: Path, padded: str) -> None:
    emu = orders(tmp_path / "e.db")
    lsn = emu.commit([("insert", "dbo.orders", {"order_id": 1})], at=at(1))
    got = emu.reader().read_changes("dbo_orders", lsn, lsn, row_filter=padded).read_all()
    assert got.num_rows == 1


@pytest.mark.parametrize("padded", ["\tall", "all\n", "all update old\r\n"])
def test_a_row_filter_with_tabs_or_newlines_is_refused_as_sql_server_refuses_it(
    tmp_path: Path, padded: str
) -> None:
    emu = orders(tmp_path / "e.db")
    lsn = emu.commit([("insert", "dbo.orders", {"order_id": 1})], at=at(1))
    with pytest.raises(InvalidRangeError) as caught:
        emu.reader().read_changes("dbo_orders", lsn, lsn, row_filter=padded).read_all()
    assert caught.value.number == 313
    with emu.serve() as server:
        number, _ = wire_error(
            server,
            f"SELECT * FROM cdc.fn_cdc_get_all_changes_dbo_orders({lsn}, {lsn}, %s)",
            (padded,),
        )
    assert number == 313


def _backend(options: dict[str, str]) -> Backend:
    return open_backend(SourceConfig.from_options({"captureInstance": "dbo_orders", **options}))


def test_with_shuffled_reads_every_library_reader_still_gets_its_rows_in_order(
    tmp_path: Path,
) -> None:
    emu = Emulator.create(tmp_path / "e.db", start="2026-09-28T13:50:00", shuffle_unordered=True)
    assert emu.settings()["shuffle_unordered"] is True
    emu.create_table(
        "dbo.orders", {"order_id": "int", "status": "nvarchar(20)"}, primary_key="order_id"
    )
    emu.enable_cdc("dbo.orders")
    first = emu.commit([("insert", "dbo.orders", {"order_id": i}) for i in range(8)], at=at(1))
    last = emu.commit(
        [("update", "dbo.orders", {"order_id": i, "status": "paid"}) for i in range(0, 8, 2)],
        at=at(2),
    )
    columns = (ReadColumn("order_id", "INT", "int"), ReadColumn("status", "STRING", "nvarchar"))
    stored = [r["__$seqval"] for r in emu.change_rows("dbo_orders")]
    with emu.serve() as server:
        raw = rows(server, "SELECT CONVERT(varchar(22), __$seqval, 1) FROM cdc.dbo_orders_CT")
        assert sorted(s for (s,) in raw) == sorted(stored)
        assert [s for (s,) in raw] != stored  # the shuffle is on: no stored order leaks
        oracle = _backend({"backend": "emulator", "emulatorPath": str(emu.path)})
        wire = _backend(
            {"backend": "pymssql", "connectionString": server.connection_string("pymssql")}
        )
        try:

            def changes(backend: Backend) -> pa.Table:
                batches = backend.changes.read_changes(
                    "dbo_orders",
                    first,
                    last,
                    columns=columns,
                    include_command_id=True,
                    time_zone="UTC",
                    batch_rows=3,
                )
                return pa.Table.from_batches(list(batches))

            def table(backend: Backend) -> pa.Table:
                batches = backend.snapshots.read_table(
                    "dbo", "orders", columns=columns, keys=["order_id"], lo=None, hi=None,
                    batch_rows=3,
                )  # fmt: skip
                return pa.Table.from_batches(list(batches))

            assert changes(wire).equals(changes(oracle))  # the partition reader's order
            for backend in (wire, oracle):
                assert backend.planner.split_points("dbo_orders", first, last, 2) == (
                    oracle.planner.split_points("dbo_orders", first, last, 2)
                )
                tiles = backend.snapshots.key_tiles("dbo", "orders", ["order_id"], 3)
                assert [str(t) for t in tiles] == ["3", "6"]  # the wire gives keys as text
                assert backend.planner.nth_commit_after(first, 1) == last
            # A snapshot read needs no order (its rows are keyed images): compared by key.
            assert table(wire).sort_by("order_id").equals(table(oracle).sort_by("order_id"))
        finally:
            wire.close()
            oracle.close()
