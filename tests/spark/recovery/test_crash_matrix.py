"""The crash matrix of spec 30 section 6.4: every failpoint of the project, with `raise` in
process and `kill` in a child process (exit code 137), then one clean run and its invariants.

Each case starts from one history, built once for the module: a bootstrap of orders(3) and a
run after inserting 3 (a healthy stream, kept for the sink's crash points); then an update, a
delete and cleanup past everything, so the next run must recover (the recovery's points,
`chunked.after_open`, and `backfill.after_wave_append` in the chunked snapshot it opens, and
`backfill.waves_in_flight` in an overlapped backfill of it).

The `kill` rows read the source through the three backends in turn (`KILLED_OVER`): the
killed child and the run after it read the emulator in process, or served over TDS through
mssql-python or pymssql (issue 15), so every backend is crashed without running each row
three times. The `raise` rows read in process.

`source.inside_snapshot` kills the planner of the source alone (option snapshotMode) in the middle
of its own snapshot, in a child whose sink is a plain Delta path; a restart on the same
checkpoint must neither lose nor duplicate a row (decision 1398).

`silver.after_merge` is not repeated here: tests/spark/silver/test_silver.py crashes it with `raise`
(test_a_crash_after_the_merge_is_finished_by_the_next_call) and with `kill`
(test_a_killed_call_after_the_merge_is_finished_by_the_next_call), on a history with deletes
and re-inserted keys that this one lacks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import SparkSession

from mssql_cdc import register, stream
from mssql_cdc.facts import read_batch_commit
from mssql_cdc.testing import InjectedFault, failpoints
from tests.spark.support.backends import Backend
from tests.spark.support.recovery_support import Orders, restore, stash
from tests.spark.support.stream_snapshot_support import at_second, merged, source_table
from tests.spark.support.stream_snapshot_support import orders as snapshot_orders
from tests.support import emulator_profile

REPO = Path(__file__).resolve().parents[3]

FULL_POINTS = [
    "recovery.after_recovering",
    "snapshot.before_append",
    "snapshot.after_append",
    "recovery.after_event",
    "recovery.after_state",
]
SINK_POINTS = ["sink.after_target_write", "sink.after_facts_write"]
HEALTHY = "-healthy"
# The backend each kill row reads through: every backend is killed at least three times.
KILLED_OVER: dict[str, Backend] = {
    "recovery.after_recovering": "emulator",
    "snapshot.before_append": "mssql-python",
    "snapshot.after_append": "pymssql",
    "recovery.after_event": "mssql-python",
    "recovery.after_state": "pymssql",
    "chunked.after_open": "emulator",
    "sink.after_target_write": "mssql-python",
    "sink.after_facts_write": "pymssql",
    "backfill.after_wave_append": "emulator",
    "backfill.waves_in_flight": "mssql-python",
}


class History(NamedTuple):
    purged: Orders  # the stream after cleanup purged what it had not read: it must recover
    last_read: str  # the commit time of the last offset the purged stream read
    healthy: Orders  # the same stream before the purge (restore it with suffix=HEALTHY)
    bootstrap_lsn: str  # the bootstrap snapshot's stamp: changes after it are bronze's


@pytest.fixture(scope="module")
def history(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> History:
    """The history every case starts from (built once: Spark runs are slow)."""
    orders = Orders(spark, tmp_path_factory.mktemp("crash") / "case")
    orders.orders(3)
    orders.wait_for_capture()  # on the realistic profile max_lsn is the captured one
    bootstrap_lsn = orders.emu.max_lsn()  # the bootstrap is stamped at max_lsn
    assert bootstrap_lsn is not None
    orders.run()
    insert3 = orders.commit(("insert", 3, "new"))
    orders.run()
    healthy = stash(orders, suffix=HEALTHY)
    orders = restore(healthy, suffix=HEALTHY)
    orders.commit(("update", 1, "paid"))
    orders.commit(("delete", 2, None))
    orders.cleanup_past_everything()
    last_read = orders.commit_time(insert3)  # before stash() closes this Orders' emulator
    return History(stash(orders), last_read, healthy, bootstrap_lsn)


def crash_in_child(
    orders: Orders, point: str, *, call: str = "to_delta", options: dict[str, str], **kwargs: Any
) -> None:
    """to_delta (or backfill) in a child process whose failpoint `point` kills it; waits for
    its JVM."""
    orders.wait_for_capture()  # the child's failpoint needs a batch to fire in
    pid_file = orders.root / "child-jvm.pid"
    args_file = orders.root / "child-args.json"
    kw: dict[str, Any] = {}
    if call == "to_delta":
        kw = {"trigger": {"availableNow": True}, "bootstrap": True, "on_data_loss": "resnapshot"}
    kw.update(kwargs)
    args_file.write_text(
        json.dumps(
            {
                "call": call,
                "warehouse": str(orders.root / "child-warehouse"),
                "jvm_pid_file": str(pid_file),
                "options": options,
                "target": orders.target,
                "app_id": orders.app_id,
                "checkpoint": str(orders.checkpoint),
                "facts": orders.facts,
                "kwargs": kw,
            }
        )
    )
    env = {**os.environ, "MSSQL_CDC_FAILPOINTS": f"{point}=kill"}
    child = subprocess.run(
        [sys.executable, "-m", "tests.spark.support.crash_child", str(args_file)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert child.returncode == 137, child.stderr[-3000:]
    wait_for_jvm(pid_file)


def wait_for_jvm(pid_file: Path) -> None:
    """Wait until the killed child's JVM, whose pid it wrote into `pid_file`, has exited."""
    jvm = int(pid_file.read_text())
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            os.kill(jvm, 0)
        except ProcessLookupError:
            return
        time.sleep(0.5)
    raise AssertionError(f"the child's JVM {jvm} did not exit after the kill")


def crash(orders: Orders, point: str, how: str, **kwargs: Any) -> None:
    """Run to_delta with `point` armed: `raise` here, `kill` in a child process (the caller
    chose its backend with `killed_over`)."""
    if how == "kill":
        crash_in_child(orders, point, options=orders.options(), **kwargs)
        return
    with failpoints({point: "raise"}):
        if point.startswith("sink."):
            # The sink runs inside the query: the fault fails the query, not to_delta.
            query = orders.to_delta(**kwargs)
            with pytest.raises(
                StreamingQueryException, match=f"injected fault at failpoint {point}"
            ):
                query.awaitTermination(300)
        else:
            with pytest.raises(InjectedFault):
                orders.to_delta(**kwargs)
    assert orders.spark.streams.active == []


def killed_over(orders: Orders, point: str, how: str) -> Orders:
    """`orders` reading through the backend `KILLED_OVER` gives `point`'s kill row."""
    return replace(orders, backend=KILLED_OVER[point]) if how == "kill" else orders


def assert_invariants(orders: Orders, *, chunked: bool = False) -> None:
    state = orders.state()
    assert state is not None  # I3: it parses and names the new generation
    assert state["generation"] == 1
    assert "recovering" not in state
    assert "failed_at" not in state
    completions = Counter(
        (f["event"], f["generation"])
        for f in orders.facts_rows()
        if f["event"] in ("bootstrap", "resnapshot")
    )
    if chunked:  # a chunked generation gets its row from backfill(), not from the recovery
        assert completions == Counter({("bootstrap", 0): 1})
    else:
        assert completions == Counter({("bootstrap", 0): 1, ("resnapshot", 1): 1})  # I2
        assert len(orders.snapshot_lsns()) == 2  # I1: one whole snapshot per generation
        assert orders.rebuilt() == orders.source()  # I4


@pytest.mark.parametrize("how", ["raise", "kill"])
@pytest.mark.parametrize("point", FULL_POINTS)
def test_a_crash_during_a_full_recovery_is_finished_by_the_next_run(
    history: History, point: str, how: str
) -> None:
    orders, last_read = killed_over(restore(history.purged), point, how), history.last_read
    crash(orders, point, how)
    state = orders.state()
    if point == "recovery.after_state":
        assert state is not None
        assert state["generation"] == 1
    else:
        assert state is not None
        assert state["generation"] == 0
        assert "recovering" in state
    query = orders.run()
    assert query.name == "life-v1.g1"
    assert_invariants(orders)
    [event] = orders.events("resnapshot")
    # the first attempt's start, kept in recovering, not the snapshot it may have taken
    assert event["lost_from_ts"].isoformat(timespec="milliseconds") == last_read
    opens = [f for f in orders.events("snapshot_open") if f["generation"] == 1]
    if point == "snapshot.before_append":
        assert len(opens) == 2  # one full open per attempt
    if point == "snapshot.after_append":
        assert event["rows"] is None
        assert event["duration_ms"] is None
    if point == "recovery.after_event":
        assert event["rows"] == 3


@pytest.mark.parametrize("how", ["raise", "kill"])
def test_a_crash_after_a_chunked_open_reuses_the_open(history: History, how: str) -> None:
    orders = killed_over(restore(history.purged), "chunked.after_open", how)
    crash(orders, "chunked.after_open", how, snapshot="chunked")
    orders.run(snapshot="chunked")
    opens = [f for f in orders.events("snapshot_open") if f["generation"] == 1]
    assert len(opens) == 1
    state = orders.state()
    assert state is not None
    assert state["snapshot_lsn"] == opens[0]["min_lsn"]
    assert_invariants(orders, chunked=True)


@pytest.mark.parametrize("how", ["raise", "kill"])
@pytest.mark.parametrize("point", SINK_POINTS)
def test_a_crash_in_an_ordinary_micro_batch_is_replayed_without_a_second_write(
    history: History, point: str, how: str
) -> None:
    orders = killed_over(restore(history.healthy, suffix=HEALTHY), point, how)
    orders.commit(("update", 1, "paid"))
    orders.commit(("delete", 2, None), ("insert", 5, "new"))
    crash(orders, point, how)
    batches_before = batch_ids(orders)
    orders.run()

    changes = [r for r in orders.bronze() if r["_operation"] != 0]
    expected = Counter(
        (r["__$start_lsn"], r["__$seqval"], r["__$operation"])
        for r in orders.emu.change_rows("dbo_orders")
        if str(r["__$start_lsn"]) > history.bootstrap_lsn  # older ones are in the snapshot
    )
    assert Counter((r["_start_lsn"], r["_seqval"], r["_operation"]) for r in changes) == expected
    assert set(expected.values()) == {1}  # every change exactly once
    batches = batch_ids(orders)
    assert set(batches.values()) == {1}  # one facts row per batch, the replayed one included
    assert sorted(batches) == list(range(len(batches)))
    if point == "sink.after_facts_write":
        assert batches == batches_before  # the replay found its row and wrote nothing
    else:
        assert len(batches) == len(batches_before) + 1
    rows = {f["batch_id"]: f["rows"] for f in orders.facts_rows() if f["event"] is None}
    assert sum(rows.values()) == len(changes)
    # The replay after sink.after_target_write finds its bronze commit made: Delta skips the
    # append, nothing is observed, and the sink reads the batch again (decision 1350). Every
    # batch row, the replayed one included, holds the aggregates of its bronze rows.
    for f in orders.facts_rows():
        if f["event"] is None:
            assert aggregates_row(f) == aggregates_of_rows(changes, f["batch_id"])
    assert bronze_batch_commits(orders) == Counter(dict.fromkeys(batches, 1))  # one each
    assert orders.rebuilt() == orders.source()


AGGREGATES = ("rows", "min_lsn", "max_lsn", "min_commit_ts", "max_commit_ts")
COUNTS = ("inserts", "updates", "deletes")


def aggregates_row(facts_row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(facts_row[c] for c in (*AGGREGATES, *COUNTS))


def aggregates_of_rows(changes: list[dict[str, Any]], batch_id: int) -> tuple[Any, ...]:
    """The facts row's aggregates from the batch's bronze rows, in plain Python: operation
    codes 1 delete, 2 insert, 4 update after-image, per
    https://learn.microsoft.com/en-us/sql/relational-databases/system-functions/cdc-fn-cdc-get-all-changes-capture-instance-transact-sql
    """
    mine = [r for r in changes if r["_batch_id"] == batch_id]
    lsns = [r["_start_lsn"] for r in mine]
    times = [r["_commit_ts"] for r in mine]
    ops = Counter(r["_operation"] for r in mine)
    return (
        len(mine),
        min(lsns, default=None),
        max(lsns, default=None),
        min(times, default=None),
        max(times, default=None),
        ops[2],
        ops[4],
        ops[1],
    )


def bronze_batch_commits(orders: Orders) -> Counter[int]:
    """How many bronze commits name each micro-batch of the live sink, from the Delta log."""
    found: Counter[int] = Counter()
    for path in sorted(Path(orders.target, "_delta_log").glob("*.json")):
        for line in path.read_text().splitlines():
            info = json.loads(line).get("commitInfo") if line else None
            marker = read_batch_commit(info.get("userMetadata") or "") if info else None
            if marker is not None and marker["generation"] == 0:
                found[marker["batch_id"]] += 1
    return found


def batch_ids(orders: Orders) -> Counter[int]:
    return Counter(f["batch_id"] for f in orders.facts_rows() if f["event"] is None)


@pytest.mark.parametrize("how", ["raise", "kill"])
def test_a_crash_in_a_backfill_wave_is_resumed_with_one_append_per_wave(
    history: History, how: str
) -> None:
    orders = killed_over(restore(history.purged), "backfill.after_wave_append", how)
    orders.run(snapshot="chunked")  # the recovery opens a chunked snapshot of generation 1
    options = {**orders.options(), "numPartitions": "1"}  # one chunk per wave

    def backfill() -> dict[str, Any]:
        status = stream(orders.spark, options).backfill(
            orders.target, app_id=orders.app_id, facts_table=orders.facts, chunk_rows=1
        )
        return dict(status)

    if how == "kill":
        point = "backfill.after_wave_append"
        crash_in_child(orders, point, call="backfill", options=options, chunk_rows=1)
    else:
        with failpoints({"backfill.after_wave_append": "raise"}), pytest.raises(InjectedFault):
            backfill()
    assert wave_appends(orders) == Counter({0: 1})  # wave 0 is in bronze, its facts are not
    assert [f for f in orders.facts_rows() if f["event"] == "snapshot_chunk"] == []

    status = backfill()
    assert status["state"] == "done"
    waves = wave_appends(orders)
    assert set(waves.values()) == {1}  # one append per wave, the crashed one included
    assert sorted(waves) == list(range(len(waves)))
    assert len(waves) == status["chunks_total"]
    chunk_rows = [r for r in orders.bronze() if r.get("_chunk") is not None]
    keys = Counter((r["_snapshot"], r["order_id"]) for r in chunk_rows)
    assert set(keys.values()) == {1}  # op-0 keys unique per snapshot
    [event] = orders.events("resnapshot")
    assert event["rows"] == len(chunk_rows) == 3  # orders 0, 1 and 3 remain
    assert orders.rebuilt() == orders.source()


@pytest.mark.parametrize("how", ["raise", "kill"])
def test_a_crash_with_two_backfill_waves_in_flight_neither_loses_nor_duplicates_a_row(
    history: History, how: str
) -> None:
    orders = killed_over(restore(history.purged), "backfill.waves_in_flight", how)
    orders.run(snapshot="chunked")  # the recovery opens a chunked snapshot of generation 1
    options = {**orders.options(), "numPartitions": "1"}  # the first wave reads one chunk
    sized = {"chunk_rows": 1, "target_wave_seconds": 600}  # overlapped waves

    def backfill() -> dict[str, Any]:
        status = stream(orders.spark, options).backfill(
            orders.target, app_id=orders.app_id, facts_table=orders.facts, **sized
        )
        return dict(status)

    if how == "kill":  # wave 0 appended, wave 1 being read and appended: the process dies
        crash_in_child(
            orders, "backfill.waves_in_flight", call="backfill", options=options, **sized
        )
        assert wave_appends(orders) in (Counter({0: 1}), Counter({0: 1, 1: 1}))
    else:  # the call waits for wave 1's append before it raises: both are in bronze
        with failpoints({"backfill.waves_in_flight": "raise"}), pytest.raises(InjectedFault):
            backfill()
        assert wave_appends(orders) == Counter({0: 1, 1: 1})
    assert [f for f in orders.facts_rows() if f["event"] == "snapshot_chunk"] == []

    status = backfill()
    assert status["state"] == "done"
    waves = wave_appends(orders)
    assert set(waves.values()) == {1}  # one append per wave, the ones in flight included
    assert sorted(waves) == list(range(len(waves)))
    chunk_rows = [r for r in orders.bronze() if r.get("_chunk") is not None]
    keys = Counter((r["_snapshot"], r["order_id"]) for r in chunk_rows)
    assert set(keys.values()) == {1}  # op-0 keys unique per snapshot
    facts = [f for f in orders.facts_rows() if f["event"] == "snapshot_chunk"]
    per_chunk = Counter(json.loads(f["detail"])["chunk"] for f in facts)
    assert set(per_chunk.values()) == {1}  # one facts row per chunk
    assert len(per_chunk) == status["chunks_total"]
    in_bronze = Counter(r["_chunk"] for r in chunk_rows)
    assert {json.loads(f["detail"])["chunk"]: f["rows"] for f in facts} == {
        c: in_bronze.get(c, 0) for c in per_chunk
    }
    [event] = orders.events("resnapshot")
    assert event["rows"] == len(chunk_rows) == 3  # orders 0, 1 and 3 remain
    assert orders.rebuilt() == orders.source()


def wave_appends(orders: Orders) -> Counter[int]:
    """Bronze commits of backfill waves, counted per wave, from the Delta history."""
    history = orders.spark.sql(f"DESCRIBE HISTORY delta.`{orders.target}`").collect()
    waves: Counter[int] = Counter()
    for commit in history:
        metadata = json.loads(commit["userMetadata"] or "{}")
        if "backfill" in metadata:
            waves[int(metadata["wave"])] += 1
    return waves


def test_a_kill_inside_the_source_s_own_snapshot_neither_loses_nor_duplicates_a_row(
    spark: SparkSession, tmp_path: Path
) -> None:
    path, ckpt, target = tmp_path / "e.db", tmp_path / "ckpt", str(tmp_path / "plain")
    emu = snapshot_orders(path, 9)
    options = {
        "captureInstance": "dbo_orders",
        "backend": "emulator",
        "emulatorPath": str(path),
        "snapshotMode": "initial",
        "maxCommitsPerBatch": "3",
    }
    pid_file, args_file = tmp_path / "child-jvm.pid", tmp_path / "child-args.json"
    args_file.write_text(
        json.dumps(
            {
                "call": "source_stream",
                "warehouse": str(tmp_path / "child-warehouse"),
                "jvm_pid_file": str(pid_file),
                "options": options,
                "target": target,
                "checkpoint": str(ckpt),
            }
        )
    )
    env = {**os.environ, "MSSQL_CDC_FAILPOINTS": "source.inside_snapshot=kill"}
    child = subprocess.run(
        [sys.executable, "-m", "tests.spark.support.crash_child", str(args_file)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert child.returncode == 137, child.stderr[-3000:]
    assert "the query failed" in child.stderr  # the planner's runner died, then the child
    wait_for_jvm(pid_file)
    kept = [r.asDict() for r in spark.read.format("delta").load(target).collect()]
    assert sorted(r["order_id"] for r in kept) == [0, 1, 2]  # the first batch only
    assert len(list((ckpt / "offsets").iterdir())) > len(list((ckpt / "commits").iterdir()))

    emu.commit([("update", "dbo.orders", {"order_id": 7, "status": "paid"})], at=at_second(40))
    emu.commit([("delete", "dbo.orders", {"order_id": 1})], at=at_second(41))
    emulator_profile.wait_for_capture(emu, at_second(41))
    register(spark)
    query = (
        spark.readStream.format("mssql_cdc")
        .options(**options)
        .load()
        .writeStream.format("delta")
        .option("checkpointLocation", str(ckpt))
        .trigger(availableNow=True)
        .start(target)
    )
    assert query.awaitTermination(300)
    rows = [r.asDict() for r in spark.read.format("delta").load(target).collect()]
    snapshot = Counter(r["order_id"] for r in rows if r["_operation"] == 0)
    assert snapshot == Counter(range(9))  # every key once: none lost, none twice
    assert merged(rows) == source_table(emu)
