"""The emulator backend against real emulator files; oracles are the Emulator's own views."""

from __future__ import annotations

import itertools
import pickle
from datetime import UTC, datetime, time
from pathlib import Path

import pyarrow as pa
import pytest

from mssql_cdc.core import lsn
from mssql_cdc.emulator import Emulator
from mssql_cdc.errors import ConfigError
from mssql_cdc.options.config import SourceConfig
from mssql_cdc.sqlserver.backend_choice import open_backend
from mssql_cdc.sqlserver.emulated.backend import EmulatorBackend
from mssql_cdc.sqlserver.emulated.local_time import local_to_utc, local_to_utc_array
from mssql_cdc.sqlserver.emulated.snapshot import EmulatorSnapshotReader
from mssql_cdc.sqlserver.metadata import ReadColumn
from tests.unit.support.emulator_oracle import at, orders

COLUMNS = (
    ReadColumn("order_id", "INT"),
    ReadColumn("status", "STRING"),
    ReadColumn("amount", "DECIMAL(18,2)"),
)


def three_commits(path: Path, **create: object) -> tuple[Emulator, list[str]]:
    emu = orders(path, **create)
    lsns = [
        emu.commit([("insert", "dbo.orders", {"order_id": 1, "status": "new"})], at=at(0)),
        emu.commit(
            [
                ("insert", "dbo.orders", {"order_id": 2, "amount": "1.50"}),
                ("update", "dbo.orders", {"order_id": 1, "status": "paid"}),
            ],
            at=at(10),
        ),
        emu.commit([("delete", "dbo.orders", {"order_id": 2})], at=at(20)),
    ]
    return emu, lsns


def test_change_reads_carry_the_instance_nulls_and_the_declared_types(tmp_path: Path) -> None:
    emu, lsns = three_commits(tmp_path / "e.db")
    backend = EmulatorBackend(str(tmp_path / "e.db"))
    batches = list(
        backend.read_changes(
            "dbo_orders",
            lsn.Lsn(lsns[0]),
            lsn.Lsn(lsns[2]),
            columns=(*COLUMNS, ReadColumn("note", "STRING")),
            include_command_id=True,
            time_zone="UTC",
            batch_rows=1000,
            null_columns=("note",),
        )
    )
    table = pa.Table.from_batches(batches)
    assert table.schema.names == [
        "_capture_instance", "_start_lsn", "_seqval", "_operation", "_command_id",
        "_commit_ts", "order_id", "status", "amount", "note",
    ]  # fmt: skip
    assert table.schema.field("amount").type == pa.decimal128(18, 2)
    got = table.to_pylist()
    oracle = emu.change_rows("dbo_orders")
    assert [(r["_start_lsn"], r["_operation"], r["order_id"]) for r in got] == [
        (r["__$start_lsn"], r["__$operation"], r["order_id"]) for r in oracle
    ]
    assert {r["_capture_instance"] for r in got} == {"dbo_orders"}
    assert {r["note"] for r in got} == {None}
    assert [r["_commit_ts"] for r in got] == [emu.lsn_time(r["_start_lsn"]) for r in got]


def test_the_first_batch_of_a_read_holds_at_most_64_rows(tmp_path: Path) -> None:
    emu = orders(tmp_path / "e.db")
    last = emu.commit([("insert", "dbo.orders", {"order_id": i}) for i in range(200)], at=at(0))
    sizes = [
        b.num_rows
        for b in EmulatorBackend(str(tmp_path / "e.db")).read_changes(
            "dbo_orders",
            lsn.Lsn(last),
            lsn.Lsn(last),
            columns=COLUMNS,
            include_command_id=False,
            time_zone="UTC",
            batch_rows=100,
        )
    ]
    assert sizes[0] == 64
    assert max(sizes) <= 100
    assert sum(sizes) == 200


def test_server_local_times_convert_to_utc_by_zone_or_offset() -> None:
    local = datetime(2026, 9, 28, 11, 0)
    # Sao Paulo keeps UTC-3 all year since 2019; Berlin is UTC+2 in September, UTC+1 in January.
    assert local_to_utc(local, "America/Sao_Paulo") == datetime(2026, 9, 28, 14, 0)
    assert local_to_utc(local, "Europe/Berlin") == datetime(2026, 9, 28, 9, 0)
    assert local_to_utc(datetime(2026, 1, 5, 11, 0), "Europe/Berlin") == datetime(2026, 1, 5, 10)
    assert local_to_utc(local, "+05:30") == datetime(2026, 9, 28, 5, 30)
    assert local_to_utc(local, "-03:00") == datetime(2026, 9, 28, 14, 0)
    assert local_to_utc(local, "UTC") == local
    values = pa.array([local, None, datetime(2026, 1, 5, 11, 0)], pa.timestamp("us"))
    for zone in ("America/Sao_Paulo", "Europe/Berlin", "+05:30", "UTC"):
        expected = [None if v is None else local_to_utc(v, zone) for v in values.to_pylist()]
        assert local_to_utc_array(values, zone).to_pylist() == expected, zone


def test_the_emulator_zone_resolves_and_an_unknown_zone_is_refused(tmp_path: Path) -> None:
    three_commits(tmp_path / "e.db")
    backend = EmulatorBackend(str(tmp_path / "e.db"))
    assert backend.resolve_time_zone("auto") == "UTC"  # the emulator's server_time_zone()
    assert backend.resolve_time_zone("Europe/Berlin") == "Europe/Berlin"
    with pytest.raises(ConfigError, match="sourceTimeZone"):
        backend.resolve_time_zone("Mars/Olympus")


def test_commit_time_of_an_lsn_between_entries_is_the_newest_entry_below(tmp_path: Path) -> None:
    emu, lsns = three_commits(tmp_path / "e.db")
    backend = EmulatorBackend(str(tmp_path / "e.db"))
    between = lsn.increment(lsns[1])
    assert emu.lsn_time(between) is None  # not an entry itself
    assert backend.commit_time(between, "UTC") == emu.lsn_time(lsns[1])
    assert backend.commit_time(lsn.decrement(lsns[0]), "UTC") is None
    later = emu.commit([("insert", "dbo.orders", {"order_id": 9})], at=at(30))
    assert backend.commit_time(lsn.increment(later), "UTC") == emu.lsn_time(later)


def test_planner_values_follow_the_emulator(tmp_path: Path) -> None:
    emu, lsns = three_commits(tmp_path / "e.db")
    idle = emu.idle(at=at(30))
    backend = EmulatorBackend(str(tmp_path / "e.db"))
    assert backend.max_lsn() == idle
    assert backend.min_lsn("dbo_orders") == emu.min_lsn("dbo_orders")
    assert backend.min_lsn("nope") == lsn.ZERO
    assert backend.nth_commit_after(lsn.Lsn(lsns[0]), 2) == lsns[2]
    assert backend.nth_commit_after(lsn.Lsn(lsns[0]), 3) == idle
    tiles = backend.split_points("dbo_orders", lsn.Lsn(lsns[0]), lsn.Lsn(lsns[2]), 3)
    assert sum(t.rows for t in tiles) == len(emu.change_rows("dbo_orders"))
    assert tiles[-1].last_lsn == lsns[2]
    [instance] = backend.capture_instances("dbo", "orders")
    assert (instance.name, instance.source_schema, instance.source_table) == (
        "dbo_orders", "dbo", "orders",
    )  # fmt: skip
    assert instance.captured_columns == ("order_id", "status", "amount")
    assert instance.index_columns == ("order_id",)
    assert [i.name for i in backend.capture_instances()] == ["dbo_orders"]
    assert [c.sql_type for c in backend.captured_columns("dbo_orders")] == [
        "int", "nvarchar", "decimal",
    ]  # fmt: skip
    assert backend.change_table_access("dbo_orders").has_command_id
    restored = pickle.loads(pickle.dumps(backend))
    assert restored.max_lsn() == idle


def test_ddl_history_is_reported_within_the_interval(tmp_path: Path) -> None:
    emu, lsns = three_commits(tmp_path / "e.db")
    ddl = emu.add_column("dbo.orders", "note", "nvarchar(40)", at=at(30))
    backend = EmulatorBackend(str(tmp_path / "e.db"))
    [entry] = backend.ddl_history("dbo_orders", lsn.Lsn(lsns[2]), lsn.Lsn(ddl))
    assert entry.ddl_lsn == ddl
    assert "note" in entry.ddl_command
    assert backend.ddl_history("dbo_orders", lsn.Lsn(ddl), lsn.Lsn(ddl)) == []


def test_snapshot_reads_cover_the_table_by_key_range(tmp_path: Path) -> None:
    emu = orders(tmp_path / "e.db")
    emu.commit([("insert", "dbo.orders", {"order_id": i, "status": f"s{i}"}) for i in range(10)])
    reader = EmulatorSnapshotReader(str(tmp_path / "e.db"))
    assert reader.key_extent("dbo", "orders", "order_id") == (0, 9)
    tiles = reader.key_tiles("dbo", "orders", ["order_id"], 3)
    assert tiles == [4, 7]  # NTILE(3) of 10 rows: 4, 3, 3
    edges = [None, *tiles, None]
    seen = []
    for lo, hi in itertools.pairwise(edges):
        for batch in reader.read_table(
            "dbo", "orders", columns=COLUMNS[:2], keys=["order_id"], lo=lo, hi=hi, batch_rows=5
        ):
            seen += batch.to_pylist()
    assert seen == [
        {"order_id": r["order_id"], "status": r["status"]} for r in emu.rows("dbo.orders")
    ]
    assert reader.key_at("dbo", "orders", ["order_id"], 3, inclusive=True, position=2) == 5
    assert reader.key_at("dbo", "orders", ["order_id"], 3, inclusive=False, position=0) == 4
    assert reader.key_at("dbo", "orders", ["order_id"], None, inclusive=True, position=0) == 0
    assert reader.key_at("dbo", "orders", ["order_id"], 8, inclusive=False, position=5) is None
    assert reader.row_count("dbo", "orders") == 10


def test_backend_choice_follows_the_backend_option(tmp_path: Path) -> None:
    three_commits(tmp_path / "e.db")
    config = SourceConfig.from_options(
        {
            "captureInstance": "dbo_orders",
            "backend": "emulator",
            "emulatorPath": str(tmp_path / "e.db"),
        }
    )
    backend = open_backend(config)
    try:
        assert isinstance(backend.planner, EmulatorBackend)
        assert isinstance(backend.snapshots, EmulatorSnapshotReader)
        assert backend.planner.max_lsn() is not None
    finally:
        backend.close()


def test_rows_with_a_null_snapshot_key_are_read_once_in_the_first_range(tmp_path: Path) -> None:
    emu = Emulator.create(tmp_path / "e.db")
    emu.create_table("dbo.items", {"id": "int", "k": "int"}, primary_key="id")
    emu.enable_cdc("dbo.items")
    emu.commit(
        [("insert", "dbo.items", {"id": i, "k": i}) for i in range(6)]
        + [("insert", "dbo.items", {"id": 9, "k": None})]
    )
    reader = EmulatorSnapshotReader(str(tmp_path / "e.db"))
    assert reader.key_extent("dbo", "items", "k") == (0, 5)  # MIN ignores NULL
    seen = []
    for lo, hi in [(None, 2), (2, 4), (4, None)]:
        for batch in reader.read_table(
            "dbo", "items", columns=[ReadColumn("id", "INT")], keys=["k"], lo=lo, hi=hi,
            batch_rows=10,
        ):  # fmt: skip
            seen += [r["id"] for r in batch.to_pylist()]
    assert sorted(seen) == sorted(r["id"] for r in emu.rows("dbo.items"))


def test_time_values_read_as_sql_server_text_with_seven_digits(tmp_path: Path) -> None:
    emu = Emulator.create(tmp_path / "e.db")
    emu.create_table("dbo.t", {"id": "int", "at": "time"}, primary_key="id")
    emu.enable_cdc("dbo.t")
    last = emu.commit(
        [("insert", "dbo.t", {"id": 1, "at": time(9, 5, 7, 120)}), ("insert", "dbo.t", {"id": 2})]
    )
    columns = [ReadColumn("id", "INT"), ReadColumn("at", "STRING")]
    [batch] = EmulatorBackend(str(tmp_path / "e.db")).read_changes(
        "dbo_t", lsn.Lsn(last), lsn.Lsn(last), columns=columns, include_command_id=False,
        time_zone="UTC", batch_rows=10,
    )  # fmt: skip
    assert batch.column("at").to_pylist() == ["09:05:07.0001200", None]
    [rows] = EmulatorSnapshotReader(str(tmp_path / "e.db")).read_table(
        "dbo", "t", columns=columns, keys=["id"], lo=None, hi=None, batch_rows=10
    )
    assert rows.column("at").to_pylist() == ["09:05:07.0001200", None]


def test_datetime2_and_datetimeoffset_declared_string_read_as_convert_writes_them(
    tmp_path: Path,
) -> None:
    """CONVERT(nvarchar(max), x) writes a datetime2(n) as `yyyy-mm-dd hh:mi:ss` and n digits, a
    datetimeoffset with its offset
    (https://learn.microsoft.com/en-us/sql/t-sql/functions/cast-and-convert-transact-sql), which
    is what a T-SQL backend reads for a column declared STRING; the in-process backend writes
    the same (decision 1344). Its values hold microseconds, so a seventh digit is 0."""
    emu = Emulator.create(tmp_path / "e.db")
    types = {"id": "int", "k": "datetime2(7)", "d3": "datetime2(3)", "o": "datetimeoffset(7)"}
    emu.create_table("dbo.t", types, primary_key="id")
    emu.enable_cdc("dbo.t")
    stamp = datetime(1, 1, 1, 9, 5, 7, 120)
    first = {"id": 1, "k": stamp, "d3": stamp, "o": stamp.replace(tzinfo=UTC)}
    last = emu.commit([("insert", "dbo.t", first), ("insert", "dbo.t", {"id": 2})])
    columns = [ReadColumn("id", "INT")] + [ReadColumn(n, "STRING") for n in ("k", "d3", "o")]
    expected = {
        "k": ["0001-01-01 09:05:07.0001200", None],
        "d3": ["0001-01-01 09:05:07.000", None],
        "o": ["0001-01-01 09:05:07.0001200 +00:00", None],
    }
    [batch] = EmulatorBackend(str(tmp_path / "e.db")).read_changes(
        "dbo_t", lsn.Lsn(last), lsn.Lsn(last), columns=columns, include_command_id=False,
        time_zone="UTC", batch_rows=10,
    )  # fmt: skip
    assert {n: batch.column(n).to_pylist() for n in expected} == expected
    [rows] = EmulatorSnapshotReader(str(tmp_path / "e.db")).read_table(
        "dbo", "t", columns=columns, keys=["id"], lo=None, hi=None, batch_rows=10
    )
    assert {n: rows.column(n).to_pylist() for n in expected} == expected


@pytest.mark.parametrize("sql_type", ["datetime2(7)", "datetimeoffset(7)", "time(7)"])
def test_the_in_process_reader_refuses_to_cut_chunks_by_a_seven_digit_time_key(
    tmp_path: Path, sql_type: str
) -> None:
    """Its native key path holds bounds in microseconds, so keys 100 ns apart could fall on
    the wrong side of one; it refuses before planning, naming the column and the ways out."""
    emu = Emulator.create(tmp_path / "e.db")
    emu.create_table("dbo.t", {"k": sql_type, "v": "int"}, primary_key="k")
    reader = EmulatorSnapshotReader(str(tmp_path / "e.db"))
    for plan in (
        lambda: reader.key_tiles("dbo", "t", ["k"], 3),
        lambda: reader.key_at("dbo", "t", ["k"], None, inclusive=True, position=2),
    ):
        with pytest.raises(ConfigError) as refused:
            plan()
        message = str(refused.value)
        assert f"'k' of [dbo].[t] is {sql_type}" in message
        assert "emulator serve" in message
        assert "snapshotChunks" in message


def test_the_in_process_reader_cuts_chunks_by_a_six_digit_time_key(tmp_path: Path) -> None:
    emu = Emulator.create(tmp_path / "e.db")
    emu.create_table("dbo.t", {"k": "datetime2(6)", "v": "int"}, primary_key="k")
    emu.commit(
        [("insert", "dbo.t", {"k": datetime(2026, 1, 1, 0, 0, i), "v": i}) for i in range(6)]
    )
    reader = EmulatorSnapshotReader(str(tmp_path / "e.db"))
    assert len(reader.key_tiles("dbo", "t", ["k"], 3)) == 2
