"""The `mssql_cdc` stream through Spark's real streaming engine, against the emulator.

Each run uses trigger availableNow and a foreachBatch that collects the rows; the oracles are
the emulator's change rows and mapping, in plain Python. Few tests, several outcomes each: the
Spark tier is slow on a shared machine.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession

from mssql_cdc import is_data_loss, register
from mssql_cdc.core import lsn
from mssql_cdc.core.batch_files import read_batch_files
from mssql_cdc.emulator import Emulator
from tests.support import emulator_profile

START = "2026-09-28T13:50:00"


def at(seconds: int) -> str:
    m, s = divmod(seconds, 60)
    return f"2026-09-28T14:{m:02d}:{s:02d}"


def captured(emu: Emulator, seconds: int) -> None:
    """On the realistic profile, waits for the capture job to pass every commit up to
    `at(seconds)` (the clock moves on by about 6 s); a no-op on immediate."""
    emulator_profile.wait_for_capture(emu, at(seconds))


def orders(path: Path) -> Emulator:
    emu = emulator_profile.create(path, start=START)
    emu.create_table(
        "dbo.orders", {"order_id": "int", "status": "nvarchar(20)"}, primary_key="order_id"
    )
    emu.enable_cdc("dbo.orders")
    return emu


def run(
    spark: SparkSession, path: Path, checkpoint: Path, *, on_batch: Any = None, **options: str
) -> list[list[dict[str, Any]]]:
    """One availableNow run; returns the rows of each batch in order.

    Py4J keeps the foreachBatch function for as long as the JVM's sink holds it, past the
    query and the session, so `on_batch` (which may hold an Emulator) is dropped from it when
    the run ends: a native handle left reachable at exit is a nanobind leak warning."""
    register(spark)
    batches: list[list[dict[str, Any]]] = []
    hooks = [on_batch] if on_batch is not None else []

    def collect(df: DataFrame, batch_id: int) -> None:
        batches.append([r.asDict() for r in df.collect()])
        for hook in hooks:
            hook(batch_id)

    query = (
        spark.readStream.format("mssql_cdc")
        .options(captureInstance="dbo_orders", backend="emulator", emulatorPath=str(path))
        .options(**options)
        .load()
        .writeStream.foreachBatch(collect)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    try:
        assert query.awaitTermination(300)
    finally:
        hooks.clear()
    return batches


def last_offset_line(checkpoint: Path) -> str:
    newest = max(
        (checkpoint / "offsets").iterdir(), key=lambda p: int(p.name) if p.name.isdigit() else -1
    )
    return newest.read_text().splitlines()[2]


def test_batches_end_on_commit_boundaries_and_restarts_read_only_what_is_new(
    spark: SparkSession, tmp_path: Path
) -> None:
    path, ckpt = tmp_path / "e.db", tmp_path / "ckpt"
    emu = orders(path)
    for c in range(10):
        emu.commit([("insert", "dbo.orders", {"order_id": 3 * c + k}) for k in range(3)], at=at(c))
    captured(emu, 9)
    first = run(spark, path, ckpt, maxCommitsPerBatch="4")
    assert [len(b) for b in first if b] == [12, 12, 6]
    ids = [r["order_id"] for b in first for r in b]
    assert sorted(ids) == list(range(30))
    batch_of = {}
    for n, batch in enumerate(first):
        for r in batch:
            assert batch_of.setdefault(r["_start_lsn"], n) == n  # a commit is never split
    emu.commit(
        [("insert", "dbo.orders", {"order_id": 100}), ("insert", "dbo.orders", {"order_id": 101})],
        at=at(20),
    )
    captured(emu, 20)
    second = run(spark, path, ckpt, maxCommitsPerBatch="4")
    assert sorted(r["order_id"] for b in second for r in b) == [100, 101]
    idle = emu.idle(at=at(30))
    captured(emu, 30)  # on the realistic profile the capture job writes the entry
    third = run(spark, path, ckpt, maxCommitsPerBatch="4")
    assert [r for b in third for r in b] == []
    idle_time = emu.lsn_time(idle)
    assert idle_time is not None
    assert last_offset_line(ckpt) == json.dumps(
        {"lsn": idle, "commit_ts": idle_time.isoformat(timespec="milliseconds")}
    )
    assert [r for b in run(spark, path, ckpt) for r in b] == []


def test_change_rows_have_the_declared_shape_and_available_now_stops_at_its_start(
    spark: SparkSession, tmp_path: Path
) -> None:
    path, ckpt = tmp_path / "e.db", tmp_path / "ckpt"
    emu = orders(path)
    emu.commit([("insert", "dbo.orders", {"order_id": 1, "status": "a"})], at=at(0))
    emu.commit(
        [
            ("insert", "dbo.orders", {"order_id": 2, "status": "b"}),
            ("update", "dbo.orders", {"order_id": 2, "status": "c"}),
            ("delete", "dbo.orders", {"order_id": 1}),
        ],
        at=at(1),
    )
    captured(emu, 1)
    late: list[str] = []

    def commit_during_the_run(batch_id: int) -> None:
        if not late:
            late.append(emu.commit([("insert", "dbo.orders", {"order_id": 9})], at=at(20)))

    rows = [
        r for b in run(spark, path, ckpt, on_batch=commit_during_the_run, maxCommitsPerBatch="1")
        for r in b
    ]  # fmt: skip
    assert [r["order_id"] for r in rows] == [1, 2, 2, 2, 1]
    last = [r for r in rows if r["_start_lsn"] != rows[0]["_start_lsn"]]
    assert [r["_operation"] for r in last] == [2, 3, 4, 1]
    assert last[1]["_seqval"] == last[2]["_seqval"] != last[0]["_seqval"]
    assert all(re.fullmatch(r"0x[0-9A-F]{20}", r["_start_lsn"]) for r in rows)
    assert {r["_capture_instance"] for r in rows} == {"dbo_orders"}
    assert rows[0]["_commit_ts"] == emu.lsn_time(rows[0]["_start_lsn"])
    schema = (
        spark.readStream.format("mssql_cdc")
        .options(captureInstance="dbo_orders", backend="emulator", emulatorPath=str(path))
        .load()
        .schema
    )
    assert [(f.name, f.dataType.simpleString()) for f in schema.fields] == [
        ("_capture_instance", "string"), ("_start_lsn", "string"), ("_seqval", "string"),
        ("_operation", "int"), ("_command_id", "int"), ("_commit_ts", "timestamp_ntz"),
        ("order_id", "int"), ("status", "string"),
    ]  # fmt: skip
    assert late
    assert 9 not in [r["order_id"] for r in rows]
    captured(emu, 20)
    assert [r["order_id"] for b in run(spark, path, ckpt) for r in b] == [9]


def test_starting_lsn_latest_and_explicit_read_only_later_commits(
    spark: SparkSession, tmp_path: Path
) -> None:
    path = tmp_path / "e.db"
    emu = orders(path)
    lsns = [emu.commit([("insert", "dbo.orders", {"order_id": i})], at=at(i)) for i in range(3)]
    captured(emu, 2)
    assert run(spark, path, tmp_path / "latest", startingLsn="latest") in ([], [[]])
    explicit = lsns[0].lower().removeprefix("0x")
    got = run(spark, path, tmp_path / "explicit", startingLsn=explicit)
    assert sorted(r["order_id"] for b in got for r in b) == [1, 2]
    emu.commit([("insert", "dbo.orders", {"order_id": 3})], at=at(10))
    captured(emu, 10)
    again = run(spark, path, tmp_path / "latest", startingLsn="latest")
    assert [r["order_id"] for b in again for r in b] == [3]


def test_guards_fail_the_query_loudly_and_commit_nothing(
    spark: SparkSession, tmp_path: Path
) -> None:
    path, ckpt = tmp_path / "e.db", tmp_path / "ckpt"
    emu = orders(path)
    first = emu.commit([("insert", "dbo.orders", {"order_id": 0})], at=at(0))
    captured(emu, 0)
    run(spark, path, ckpt)
    for i in (1, 2):
        emu.commit([("insert", "dbo.orders", {"order_id": i})], at=at(10 + i))
    captured(emu, 12)
    idle = emu.idle(at=at(30))
    captured(emu, 30)
    emu.cleanup("dbo_orders", idle)
    with pytest.raises(StreamingQueryException) as caught:
        run(spark, path, ckpt)
    assert is_data_loss(caught.value)
    text = str(caught.value)
    assert "'dbo_orders'" in text
    assert "purged by CDC cleanup" in text
    assert lsn.increment(first) in text  # the first LSN still needed, and min_lsn
    assert idle in text
    assert 'on_data_loss="resnapshot"' in text
    assert "failOnDataLoss=false" in text
    committed = sorted(p.name for p in (ckpt / "commits").iterdir() if p.name.isdigit())

    path2, ckpt2 = tmp_path / "f.db", tmp_path / "ckpt2"
    emu2 = orders(path2)
    marks = [emu2.commit([("insert", "dbo.orders", {"order_id": i})], at=at(i)) for i in range(3)]
    captured(emu2, 2)
    emu2.cleanup_mid_read("dbo_orders", marks[2], after_rows=1)
    with pytest.raises(StreamingQueryException) as task_failure:
        run(spark, path2, ckpt2)
    assert is_data_loss(task_failure.value)
    assert "may be missing" in str(task_failure.value)
    assert not [p for p in (ckpt2 / "commits").iterdir() if p.name.isdigit()]
    assert sorted(p.name for p in (ckpt / "commits").iterdir() if p.name.isdigit()) == committed


def test_a_skip_leaves_exactly_one_certain_event_even_after_a_replan(
    spark: SparkSession, tmp_path: Path
) -> None:
    path, ckpt, metrics = tmp_path / "e.db", tmp_path / "ckpt", tmp_path / "metrics"
    emu = orders(path)
    emu.create_table("dbo.other", {"id": "int"}, primary_key="id")
    emu.enable_cdc("dbo.other")  # keeps the mapping below our instance's cleanup
    lsns = [emu.commit([("insert", "dbo.orders", {"order_id": i})], at=at(i)) for i in range(10)]
    captured(emu, 9)
    emu.cleanup("dbo_orders", lsns[6])
    options = {
        "failOnDataLoss": "false",
        "maxCommitsPerBatch": "2",
        "metricsPath": str(metrics),
        "startingLsn": lsn.decrement(lsns[0]),
    }
    first = run(spark, path, ckpt, **options)
    assert sorted(r["order_id"] for b in first for r in b) == [6, 7, 8, 9]
    assert (metrics / f"range-{lsns[6]}-{lsns[6]}.json").exists()  # the first range
    name = f"event-data_skipped-dbo_orders-{lsns[0]}.json"
    assert [p.name for p in metrics.glob("event-*")] == [name]
    [event] = read_batch_files(metrics).events
    assert event.detail == {
        "from": lsns[0], "to": lsns[6], "certain": True, "capture_instance": "dbo_orders",
    }  # fmt: skip
    assert event.lsn == lsns[6]
    assert event.lost_to_ts == event.commit_ts
    # A crash after batch 0 was planned: Spark replays it, after more cleanup.
    for folder in ("offsets", "commits"):
        for p in (ckpt / folder).iterdir():
            number = re.fullmatch(r"\.?(\d+)(\.crc)?", p.name)  # with Spark's checksum files
            if number and (folder == "commits" or int(number.group(1)) > 0):
                p.unlink()
    emu.cleanup("dbo_orders", lsns[7])
    replay = run(spark, path, ckpt, **options)
    assert sorted(r["order_id"] for b in replay for r in b) == [7, 8, 9]
    # The replayed batch 0 rewrote its file with the new M; batch 1, which now starts below M
    # too, has its own gap and file, named by its own first LSN.
    assert sorted(p.name for p in metrics.glob("event-*")) == sorted(
        [name, f"event-data_skipped-dbo_orders-{lsn.increment(lsns[6])}.json"]
    )
    assert json.loads((metrics / name).read_text())["detail"]["to"] == lsns[7]


def test_a_newer_instance_takes_over_at_its_start_and_every_change_arrives_once(
    spark: SparkSession, tmp_path: Path
) -> None:
    path, metrics = tmp_path / "e.db", tmp_path / "metrics"
    emu = orders(path)
    for i in range(5):
        emu.commit([("insert", "dbo.orders", {"order_id": i})], at=at(i))
    emu.enable_cdc("dbo.orders", capture_instance="dbo_orders_v2")
    for i in range(5, 10):
        emu.commit([("insert", "dbo.orders", {"order_id": i})], at=at(10 + i))
    captured(emu, 19)
    s = emu.min_lsn("dbo_orders_v2")
    rows = [r for b in run(spark, path, tmp_path / "ckpt", metricsPath=str(metrics)) for r in b]
    assert sorted(r["order_id"] for r in rows) == list(range(10))
    for r in rows:
        assert r["_capture_instance"] == ("dbo_orders" if r["_start_lsn"] < s else "dbo_orders_v2")
    assert [p.name for p in metrics.glob("event-*")] == [
        f"event-capture_instance_switched-dbo_orders_v2-{s}.json"
    ]


def test_a_task_skip_is_a_possible_event_in_its_metrics_file(
    spark: SparkSession, tmp_path: Path
) -> None:
    path, metrics = tmp_path / "e.db", tmp_path / "metrics"
    emu = orders(path)
    lsns = [emu.commit([("insert", "dbo.orders", {"order_id": i})], at=at(i)) for i in range(3)]
    captured(emu, 2)
    emu.cleanup_mid_read("dbo_orders", lsns[2], after_rows=1)
    rows = run(spark, path, tmp_path / "ckpt", failOnDataLoss="false", metricsPath=str(metrics))
    assert sorted(r["order_id"] for b in rows for r in b) == [0, 2]  # 1 vanished mid-read
    assert not list(metrics.glob("event-*"))
    assert len(list(metrics.glob("range-*.json"))) == 1
    [event] = read_batch_files(metrics).events
    assert event.event == "data_skipped"
    assert event.detail["certain"] is False
    assert "cleanup" in event.detail["reason"]
    assert event.lsn == lsns[2]


def test_a_streaming_plan_shows_the_connection_string_redacted(
    spark: SparkSession, tmp_path: Path
) -> None:
    emu = emulator_profile.create(tmp_path / "e.db")
    emu.create_table("dbo.t", {"id": "int"}, primary_key="id")
    ci = emu.enable_cdc("dbo.t")
    register(spark)
    df = (
        spark.readStream.format("mssql_cdc")
        .options(captureInstance=ci, backend="emulator", emulatorPath=str(tmp_path / "e.db"))
        .option("connectionString", "Server=db;UID=app;PWD=Plan-S3cret")
        .load()
    )
    plan = df._jdf.queryExecution().toString()
    assert "connectionString=*********(redacted)" in plan
    assert "Plan-S3cret" not in plan
