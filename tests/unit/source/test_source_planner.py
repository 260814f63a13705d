"""The stream planner's driver methods and the executor read, called directly (no JVM).

Oracles: the emulator's own change rows, mapping and low water marks, and plain Python.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from mssql_cdc.core import lsn
from mssql_cdc.core.batch_files import read_batch_files
from mssql_cdc.core.offsets import StreamOffset
from mssql_cdc.emulator import Emulator
from mssql_cdc.errors import DataLossError, SchemaChangedError
from mssql_cdc.options.config import SourceConfig
from mssql_cdc.source.batch_plan import plan_batch
from mssql_cdc.source.planner import CdcStreamReader, SparkLsnRange
from mssql_cdc.source.table_schema import declared_columns, resolve_table
from mssql_cdc.sqlserver.backend_choice import Backend, open_backend
from mssql_cdc.sqlserver.emulated.backend import EmulatorBackend
from mssql_cdc.sqlserver.emulated.snapshot import EmulatorSnapshotReader
from mssql_cdc.sqlserver.emulated.tiles import EmulatorTileHasher
from mssql_cdc.sqlserver.metadata import ChangeTableAccess
from tests.unit.support.emulator_oracle import at, orders


def reader_for(path: Path, **options: str) -> CdcStreamReader:
    config = SourceConfig.from_options(
        {"captureInstance": "dbo_orders", "backend": "emulator", "emulatorPath": str(path)}
        | options
    )
    backend = open_backend(config)
    try:
        columns = declared_columns(
            backend.catalog, config, resolve_table(backend.catalog, "dbo_orders")
        )
    finally:
        backend.close()
    return CdcStreamReader(config, columns, 2)


def commits(emu: Emulator, ids: range, start: float = 0) -> list[str]:
    return [
        emu.commit([("insert", "dbo.orders", {"order_id": i})], at=at(start + k))
        for k, i in enumerate(ids)
    ]


def rows_of(reader: CdcStreamReader, start: dict[str, str], end: dict[str, str]) -> list[dict]:
    out = []
    for part in reader.partitions(start, end):
        for batch in reader.read(part):
            out += batch.to_pylist()
    return out


def test_starting_positions_follow_the_initial_offset_rule(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    emu = orders(path)
    lsns = commits(emu, range(3))
    mark = emu.min_lsn("dbo_orders")
    earliest = reader_for(path).initialOffset()
    assert earliest == {
        "lsn": lsn.decrement(mark),
        "commit_ts": "",  # nothing at or below the mark's predecessor in the mapping
    }
    assert reader_for(path, startingLsn="latest").initialOffset() == {
        "lsn": lsns[2],
        "commit_ts": emu.lsn_time(lsns[2]).isoformat(timespec="milliseconds"),
    }
    explicit = lsns[0].lower().removeprefix("0x").lstrip("0")
    start = reader_for(path, startingLsn=explicit).initialOffset()
    assert start["lsn"] == lsns[0]
    reader = reader_for(path)
    end = reader.latestOffset(start, ReadAllAvailable())
    assert [r["order_id"] for r in rows_of(reader, start, end)] == [1, 2]  # exclusive start


def test_before_capture_reaches_the_instance_the_start_waits_and_then_reads_the_first_capture(
    tmp_path: Path,
) -> None:
    path = tmp_path / "e.db"
    emu = orders(path, capture="manual")
    emu.commit([("insert", "dbo.orders", {"order_id": 7})], at=at(0))
    assert emu.max_lsn() is None
    [instance] = EmulatorBackend(str(path)).capture_instances("dbo", "orders")
    assert instance.start_lsn is None  # as on SQL Server: not established before capture
    with pytest.raises(ValueError, match="'dbo_orders' has no start LSN yet; retry once the cap"):
        reader_for(path).initialOffset()
    emu.drain()
    reader = reader_for(path)
    start = reader.initialOffset()
    assert start["lsn"] == lsn.decrement(emu.min_lsn("dbo_orders"))
    end = reader.latestOffset(start, ReadAllAvailable())
    assert [r["order_id"] for r in rows_of(reader, start, end)] == [7]


def test_a_newer_instance_not_yet_established_is_not_switched_to_until_capture_reaches_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "e.db"
    emu = orders(path, capture="manual")
    commits(emu, range(3))
    emu.drain()
    metrics = tmp_path / "metrics"
    reader = reader_for(path, metricsPath=str(metrics))
    start = reader.initialOffset()
    below = commits(emu, range(3, 4), start=10)  # below the newer instance's enable point
    emu.enable_cdc("dbo.orders", capture_instance="dbo_orders_v2")
    commits(emu, range(4, 6), start=20)
    emu.configure(maxtrans=1)
    assert emu.capture() == below[0]  # this cycle stops below the enable point
    newer = EmulatorBackend(str(path)).capture_instances("dbo", "orders")[1]
    assert (newer.name, newer.start_lsn) == ("dbo_orders_v2", None)
    end = reader.latestOffset(start, ReadAllAvailable())
    first = rows_of(reader, start, end)
    assert [(r["order_id"], r["_capture_instance"]) for r in first] == [
        (0, "dbo_orders"), (1, "dbo_orders"), (2, "dbo_orders"), (3, "dbo_orders"),
    ]  # fmt: skip
    assert list(metrics.glob("event-*")) == []  # no switch while start_lsn is NULL
    emu.drain()
    s = emu.min_lsn("dbo_orders_v2")
    later = reader.latestOffset(end, ReadAllAvailable())
    second = rows_of(reader, end, later)
    assert [(r["order_id"], r["_capture_instance"]) for r in second] == [
        (4, "dbo_orders_v2"), (5, "dbo_orders_v2"),
    ]  # fmt: skip
    assert [p.name for p in metrics.glob("event-*")] == [
        f"event-capture_instance_switched-dbo_orders_v2-{s}.json"
    ]


def test_admission_control_counts_mapping_entries_and_stops_at_the_available_now_end(
    tmp_path: Path,
) -> None:
    path = tmp_path / "e.db"
    emu = orders(path)
    lsns = commits(emu, range(5))
    reader = reader_for(path, maxCommitsPerBatch="2")
    assert reader.getDefaultReadLimit() == ReadMaxRows(2)
    assert reader_for(path).getDefaultReadLimit() == ReadAllAvailable()
    start = reader.initialOffset()
    reader.prepareForTriggerAvailableNow()
    later = commits(emu, range(10, 11), start=10)
    ends = []
    while (end := reader.latestOffset(start, ReadMaxRows(2))) != start:
        ends.append(end["lsn"])
        start = end
    assert ends == [lsns[1], lsns[3], lsns[4]]  # never past the end recorded at prepare
    assert reader.reportLatestOffset() == {"lsn": later[0], "commit_ts": ""}
    assert reader.latestOffset(start, ReadAllAvailable())["lsn"] == lsns[4]
    fresh = reader_for(path)
    assert fresh.latestOffset(start, ReadAllAvailable())["lsn"] == later[0]


def test_partitions_of_an_empty_interval_are_none_and_the_reader_pickles_without_state(
    tmp_path: Path,
) -> None:
    path = tmp_path / "e.db"
    emu = orders(path)
    commits(emu, range(2))
    reader = reader_for(path)
    start = reader.initialOffset()
    assert reader.partitions(start, start) == []
    end = reader.latestOffset(start, ReadAllAvailable())
    [part] = reader.partitions(start, end)
    assert isinstance(part, SparkLsnRange)
    assert part.last
    assert part.to_lsn == end["lsn"]
    state = pickle.dumps(reader)
    assert b"Reconnecting" not in state
    assert b"EmulatorReader" not in state
    copy = pickle.loads(state)
    assert [r["order_id"] for r in rows_of(copy, start, end)] == [0, 1]
    pickle.loads(pickle.dumps(part))


def test_driver_guard_raises_with_both_lsns_and_both_ways_forward(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    emu = orders(path)
    lsns = commits(emu, range(3))
    reader = reader_for(path)
    start = reader.initialOffset()
    end = reader.latestOffset(start, ReadAllAvailable())
    emu.cleanup("dbo_orders", lsns[2])
    with pytest.raises(DataLossError) as caught:
        reader.partitions(start, end)
    message = str(caught.value)
    assert "'dbo_orders'" in message
    assert "purged by CDC cleanup" in message
    assert lsn.increment(start["lsn"]) in message
    assert lsns[2] in message
    assert 'on_data_loss="resnapshot"' in message
    assert "failOnDataLoss=false" in message
    assert caught.value.possible is False


def test_a_skip_writes_one_certain_event_file_that_a_replan_rewrites(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    emu = orders(path)
    emu.create_table("dbo.other", {"id": "int"}, primary_key="id")
    emu.enable_cdc("dbo.other")  # its low water mark keeps the mapping below our cleanup
    lsns = commits(emu, range(10))
    emu.cleanup("dbo_orders", lsns[6])
    metrics = tmp_path / "metrics"
    reader = reader_for(
        path,
        failOnDataLoss="false",
        maxCommitsPerBatch="2",
        metricsPath=str(metrics),
        startingLsn=lsn.decrement(lsns[0]),
    )
    start = reader.initialOffset()
    end = reader.latestOffset(start, ReadMaxRows(2))
    assert end["lsn"] == lsns[6]  # the purged gap is skipped in one batch
    [part] = reader.partitions(start, end)
    assert (part.from_lsn, part.to_lsn) == (lsns[6], lsns[6])
    name = f"event-data_skipped-dbo_orders-{lsns[0]}.json"
    assert sorted(p.name for p in metrics.iterdir()) == [name]
    [event] = read_batch_files(metrics).events
    assert event.detail == {
        "from": lsns[0], "to": lsns[6], "certain": True, "capture_instance": "dbo_orders",
    }  # fmt: skip
    assert event.lsn == lsns[6]
    assert event.batch_end_lsn == lsns[6]
    emu.cleanup("dbo_orders", lsns[7])
    assert reader.partitions(start, end) == []  # M is past the batch's end: the piece is dropped
    assert sorted(p.name for p in metrics.iterdir()) == [name]
    [event] = read_batch_files(metrics).events
    assert event.detail["to"] == lsns[7]


def planned(
    path: Path, **options: str
) -> tuple[Emulator, list[str], CdcStreamReader, SparkLsnRange]:
    emu = orders(path)
    lsns = commits(emu, range(4))
    reader = reader_for(path, **options)
    start = reader.initialOffset()
    [part] = reader.partitions(start, reader.latestOffset(start, ReadAllAvailable()))
    assert isinstance(part, SparkLsnRange)
    return emu, lsns, reader, part


def test_a_task_that_races_cleanup_fails_after_its_rows(tmp_path: Path) -> None:
    emu, lsns, reader, part = planned(tmp_path / "e.db")
    emu.cleanup_mid_read("dbo_orders", lsns[2], after_rows=1)
    got = []
    with pytest.raises(DataLossError) as caught:
        for batch in reader.read(part):
            got += batch.to_pylist()
    assert [r["order_id"] for r in got] == [0, 2, 3]  # row 1 vanished mid-read
    assert caught.value.possible is True
    assert "rows of the range may be missing" in str(caught.value)


def test_a_lenient_task_keeps_its_rows_and_records_a_possible_loss(tmp_path: Path) -> None:
    metrics = tmp_path / "metrics"
    emu, lsns, reader, part = planned(
        tmp_path / "e.db", failOnDataLoss="false", metricsPath=str(metrics)
    )
    emu.cleanup_during_read("dbo_orders", lsns[3])
    rows = [r for b in reader.read(part) for r in b.to_pylist()]
    assert [r["order_id"] for r in rows] == [0, 1, 2, 3]
    [file] = list(metrics.iterdir())  # no event file: the task's record is in its metrics
    assert file.name == f"range-{part.from_lsn}-{part.to_lsn}.json"
    found = read_batch_files(metrics)
    [record] = found.ranges
    assert record["rows"] == 4
    assert record["last"] is True
    assert record["source_max_lsn"] == lsns[3]
    assert record["warnings"]
    [event] = found.events
    assert event.event == "data_skipped"
    assert event.lsn == lsns[3]
    assert event.detail["certain"] is False
    assert event.detail["reason"]
    assert event.detail["from"] == part.from_lsn


def test_a_lenient_task_refused_as_purged_reads_the_rows_cleanup_left(tmp_path: Path) -> None:
    metrics = tmp_path / "metrics"
    emu, lsns, reader, part = planned(
        tmp_path / "e.db", failOnDataLoss="false", metricsPath=str(metrics)
    )
    emu.cleanup("dbo_orders", lsns[2])  # after planning: the server refuses the range (313)
    rows = [r for b in reader.read(part) for r in b.to_pylist()]
    assert [r["order_id"] for r in rows] == [2, 3]  # still held, so never lost
    found = read_batch_files(metrics)
    [record] = found.ranges
    assert record["rows"] == 2
    [event] = found.events
    assert (event.detail["from"], event.detail["to"]) == (part.from_lsn, lsns[2])
    assert event.detail["certain"] is False
    assert "313" in event.detail["reason"]


def test_a_newer_instance_takes_over_at_its_start_lsn(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    emu = orders(path)
    commits(emu, range(5))
    switch = emu.enable_cdc("dbo.orders", capture_instance="dbo_orders_v2")
    commits(emu, range(5, 10), start=10)
    s = emu.min_lsn(switch)
    metrics = tmp_path / "metrics"
    reader = reader_for(path, metricsPath=str(metrics))
    start = reader.initialOffset()
    end = reader.latestOffset(start, ReadAllAvailable())
    rows = rows_of(reader, start, end)
    assert sorted(r["order_id"] for r in rows) == list(range(10))
    assert all((r["_capture_instance"] == "dbo_orders") == (r["_start_lsn"] < s) for r in rows)
    assert sorted(p.name for p in metrics.glob("event-*")) == [
        f"event-capture_instance_switched-dbo_orders_v2-{s}.json"
    ]


def test_ddl_inside_a_batch_is_an_event_or_stops_the_batch(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    emu = orders(path)
    commits(emu, range(2))
    metrics = tmp_path / "metrics"
    reader = reader_for(path, metricsPath=str(metrics))
    strict = reader_for(path, schemaChangePolicy="fail", metricsPath=str(metrics))
    start = reader.initialOffset()
    ddl = emu.add_column("dbo.orders", "note", "nvarchar(40)", at=at(30))
    commits(emu, range(5, 6), start=40)
    end = reader.latestOffset(start, ReadAllAvailable())
    with pytest.raises(SchemaChangedError, match="schemaChangePolicy"):
        strict.partitions(start, end)
    assert not metrics.exists()  # nothing written before the check
    assert reader.partitions(start, end)
    assert [p.name for p in metrics.iterdir()] == [f"event-schema_change-dbo_orders-{ddl}.json"]


def test_a_change_table_the_login_cannot_read_stops_planning_with_the_grant_to_run(
    tmp_path: Path,
) -> None:
    path = tmp_path / "e.db"
    emu = orders(path)
    commits(emu, range(2))
    config = SourceConfig.from_options(
        {"captureInstance": "dbo_orders", "backend": "emulator", "emulatorPath": str(path)}
    )
    real = EmulatorBackend(str(path))

    class NoGrant(EmulatorBackend):
        def change_table_access(self, capture_instance: str) -> ChangeTableAccess:
            return ChangeTableAccess(can_select=False, has_command_id=True)

    denied = NoGrant(str(path))
    snapshots = EmulatorSnapshotReader(str(path))
    tiles = EmulatorTileHasher(snapshots)
    backend = Backend(real, denied, real, snapshots, snapshots, tiles, real.close)
    table = resolve_table(real, "dbo_orders")
    columns = declared_columns(real, config, table)
    start = StreamOffset(lsn.decrement(emu.min_lsn("dbo_orders")), None)
    end = StreamOffset(lsn.Lsn(emu.max_lsn() or ""), None)
    with pytest.raises(PermissionError, match=r"GRANT SELECT ON cdc\.\[dbo_orders_CT\]"):
        plan_batch(backend, config, table, columns, start, end, time_zone="UTC", num_partitions=2)


def test_a_cleanup_between_the_guard_and_the_tiling_plans_the_piece_whole_for_the_task_to_judge(
    tmp_path: Path,
) -> None:
    path = tmp_path / "e.db"
    emu = orders(path)
    lsns = commits(emu, range(4))
    config = SourceConfig.from_options(
        {"captureInstance": "dbo_orders", "backend": "emulator", "emulatorPath": str(path)}
    )

    class RacedByCleanup(EmulatorBackend):
        def split_points(self, *args: Any, **kwargs: Any) -> Any:
            emu.cleanup("dbo_orders", lsns[2])  # commits after the guard read min_lsn
            return super().split_points(*args, **kwargs)

    real, raced = EmulatorBackend(str(path)), RacedByCleanup(str(path))
    snapshots = EmulatorSnapshotReader(str(path))
    backend = Backend(
        raced, real, real, snapshots, snapshots, EmulatorTileHasher(snapshots), real.close
    )
    table = resolve_table(real, "dbo_orders")
    columns = declared_columns(real, config, table)
    start = StreamOffset(lsn.decrement(lsns[0]), None)
    end = StreamOffset(lsn.Lsn(lsns[3]), None)
    [whole] = plan_batch(
        backend, config, table, columns, start, end, time_zone="UTC", num_partitions=2, min_rows=1
    )
    assert (whole.from_lsn, whole.to_lsn, whole.last) == (lsns[0], lsns[3], True)
    backend.close()

    class Refusing(RacedByCleanup):
        def split_points(self, *args: Any, **kwargs: Any) -> Any:
            raise OSError("disk I/O error")  # not a refused range: planning fails

    backend = Backend(
        Refusing(str(path)), real, real, snapshots, snapshots, EmulatorTileHasher(snapshots),
        real.close,
    )  # fmt: skip
    held = StreamOffset(lsn.decrement(lsns[2]), None)  # past the cleanup: the guard passes
    with pytest.raises(OSError, match="disk I/O error"):
        plan_batch(backend, config, table, columns, held, end, time_zone="UTC", num_partitions=2)


def test_partitions_balance_rows_not_commits(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    emu = orders(path)
    commits(emu, range(8))
    emu.commit([("insert", "dbo.orders", {"order_id": 100 + i}) for i in range(8)], at=at(20))
    config = SourceConfig.from_options(
        {"captureInstance": "dbo_orders", "backend": "emulator", "emulatorPath": str(path)}
    )
    backend = open_backend(config)
    table = resolve_table(backend.catalog, "dbo_orders")
    columns = declared_columns(backend.catalog, config, table)
    start = StreamOffset(lsn.decrement(emu.min_lsn("dbo_orders")), None)
    end = StreamOffset(lsn.Lsn(emu.max_lsn() or ""), None)
    ranges = plan_batch(
        backend, config, table, columns, start, end, time_zone="UTC", num_partitions=2, min_rows=1
    )
    per_range = [
        [r["order_id"] for r in b.to_pylist()]
        for part in ranges
        for b in [
            *backend.changes.read_changes(
                part.capture_instance, lsn.Lsn(part.from_lsn), lsn.Lsn(part.to_lsn),
                columns=columns, include_command_id=True, time_zone="UTC", batch_rows=100,
            )
        ]
    ]  # fmt: skip
    backend.close()
    assert [len(ids) for ids in per_range] == [8, 8]
    assert sorted(i for ids in per_range for i in ids) == sorted(
        r["order_id"] for r in emu.rows("dbo.orders")
    )
    assert ranges[0].from_lsn == lsn.increment(start.lsn)
    assert ranges[-1].to_lsn == end.lsn
    assert [r.last for r in ranges] == [False, True]


def test_the_schema_is_the_union_and_columns_a_newer_instance_lacks_read_null(
    tmp_path: Path,
) -> None:
    path, metrics = tmp_path / "e.db", tmp_path / "metrics"
    emu = orders(path)
    commits(emu, range(2))
    emu.add_column("dbo.orders", "note", "nvarchar(40)", at=at(10))
    emu.enable_cdc(
        "dbo.orders", capture_instance="dbo_orders_v2", captured_columns=["order_id", "note"]
    )
    s = emu.min_lsn("dbo_orders_v2")
    emu.commit([("insert", "dbo.orders", {"order_id": 5, "status": "x", "note": "n"})], at=at(20))
    reader = reader_for(path, metricsPath=str(metrics))
    start = reader.initialOffset()
    end = reader.latestOffset(start, ReadAllAvailable())
    rows = {r["order_id"]: r for r in rows_of(reader, start, end)}
    assert list(rows[5])[6:] == ["order_id", "status", "amount", "note"]  # the union
    assert (rows[5]["status"], rows[5]["note"], rows[5]["_capture_instance"]) == (
        None, "n", "dbo_orders_v2",
    )  # fmt: skip
    assert (rows[0]["status"], rows[0]["note"]) == (None, None)  # v1 never captured note
    [file] = metrics.glob("event-capture_instance_switched-*")
    assert file.name.endswith(f"-{s}.json")
    events = read_batch_files(metrics).events
    [event] = [e for e in events if e.event == "capture_instance_switched"]
    assert event.detail["uncaptured"] == ["status", "amount"]


def test_a_type_change_the_declared_type_cannot_hold_stops_before_reading(tmp_path: Path) -> None:
    path, metrics = tmp_path / "e.db", tmp_path / "metrics"
    emu = orders(path)
    commits(emu, range(2))
    reader = reader_for(path, metricsPath=str(metrics))
    start = reader.initialOffset()
    emu.alter_column("dbo.orders", "amount", "decimal(30,2)", at=at(10))
    commits(emu, range(5, 6), start=20)
    end = reader.latestOffset(start, ReadAllAvailable())
    with pytest.raises(SchemaChangedError, match=r"'amount'.*DECIMAL\(18,2\)"):
        reader.partitions(start, end)
    assert not metrics.exists()  # no event file, no range


def test_a_metrics_directory_that_cannot_be_written_never_fails_a_read(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the metrics directory should be")
    _, _, reader, part = planned(tmp_path / "e.db", metricsPath=str(blocker))
    rows = [r for b in reader.read(part) for r in b.to_pylist()]
    assert [r["order_id"] for r in rows] == [0, 1, 2, 3]
    assert any(str(blocker) in m and "could not be written" in m for m in caplog.messages)


def test_a_disabled_instance_is_followed_and_its_unread_changes_are_a_loss(
    tmp_path: Path,
) -> None:
    path = tmp_path / "e.db"
    emu = orders(path)
    commits(emu, range(2))
    reader = reader_for(path)
    start = reader.initialOffset()
    emu.enable_cdc("dbo.orders", capture_instance="dbo_orders_v2")
    commits(emu, range(5, 7), start=10)
    emu.disable_cdc("dbo_orders")  # before the stream read below S
    end = reader.latestOffset(start, ReadAllAvailable())
    with pytest.raises(DataLossError, match="capture instance 'dbo_orders', disabled before"):
        reader.partitions(start, end)
    s = emu.min_lsn("dbo_orders_v2")
    after_s = reader_for(path, startingLsn=lsn.decrement(s))  # a stream already past S
    begin = after_s.initialOffset()
    rows = rows_of(after_s, begin, after_s.latestOffset(begin, ReadAllAvailable()))
    assert [(r["order_id"], r["_capture_instance"]) for r in rows] == [
        (5, "dbo_orders_v2"), (6, "dbo_orders_v2"),
    ]  # fmt: skip
