"""The crash matrix of spec 30 section 6.4: every recovery failpoint, with `raise` in process
and `kill` in a child process (exit code 137), then one clean run and the invariants I1-I4.

Each case starts from the same history: a bootstrap of orders(3), a run after inserting 3,
then an update, a delete and cleanup past everything, so the next run must recover.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from tests.spark.recovery_support import Orders, restore, stash

from mssql_cdc.testing import InjectedFault, failpoints

REPO = Path(__file__).resolve().parents[2]

FULL_POINTS = [
    "recovery.after_recovering",
    "snapshot.before_append",
    "snapshot.after_append",
    "recovery.after_event",
    "recovery.after_state",
]


@pytest.fixture(scope="module")
def history(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> tuple[Orders, str]:
    """The history every case starts from (built once: Spark runs are slow), and the commit
    time of the last offset read."""
    orders = Orders(spark, tmp_path_factory.mktemp("crash") / "case")
    orders.orders(3)
    orders.run()
    insert3 = orders.commit(("insert", 3, "new"))
    orders.run()
    orders.commit(("update", 1, "paid"))
    orders.commit(("delete", 2, None))
    orders.cleanup_past_everything()
    return stash(orders), orders.commit_time(insert3)


def crash_in_child(orders: Orders, point: str, **kwargs: Any) -> None:
    """to_delta in a child process whose failpoint `point` kills it; waits for its JVM."""
    pid_file = orders.root / "child-jvm.pid"
    args_file = orders.root / "child-args.json"
    kw = {"trigger": {"availableNow": True}, "bootstrap": True, "on_data_loss": "resnapshot"}
    kw.update(kwargs)
    args_file.write_text(
        json.dumps(
            {
                "warehouse": str(orders.root / "child-warehouse"),
                "jvm_pid_file": str(pid_file),
                "options": orders.options(),
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
        [sys.executable, "-m", "tests.spark.crash_child", str(args_file)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert child.returncode == 137, child.stderr[-3000:]
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
    if how == "kill":
        crash_in_child(orders, point, **kwargs)
        return
    with failpoints({point: "raise"}), pytest.raises(InjectedFault):
        orders.to_delta(**kwargs)
    assert orders.spark.streams.active == []


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
    history: tuple[Orders, str], point: str, how: str
) -> None:
    orders, last_read = restore(history[0]), history[1]
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
def test_a_crash_after_a_chunked_open_reuses_the_open(
    history: tuple[Orders, str], how: str
) -> None:
    orders = restore(history[0])
    crash(orders, "chunked.after_open", how, snapshot="chunked")
    orders.run(snapshot="chunked")
    opens = [f for f in orders.events("snapshot_open") if f["generation"] == 1]
    assert len(opens) == 1
    state = orders.state()
    assert state is not None
    assert state["snapshot_lsn"] == opens[0]["min_lsn"]
    assert_invariants(orders, chunked=True)
