"""Two to_delta runs recovering one stream at once, in two processes (decision 0615).

The child process pauses at one step of its pre-flight while this process runs a whole
recovery and a batch of the generation it opens; then the child goes on. Whichever order,
the stream ends with one live generation (the one that committed first, its batches kept),
one `resnapshot` row that agrees with the state file, and a rebuild equal to the source.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from pyspark.sql import SparkSession

from tests.spark.support.recovery_support import Orders, restore, stash

REPO = Path(__file__).resolve().parents[3]


class History(NamedTuple):
    purged: Orders  # a stream whose unread changes cleanup purged: the next run recovers


@pytest.fixture(scope="module")
def history(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> History:
    orders = Orders(spark, tmp_path_factory.mktemp("race") / "case")
    orders.orders(3)
    orders.run()
    orders.commit(("update", 1, "paid"))
    orders.cleanup_past_everything()
    return History(stash(orders))


class Child:
    """to_delta(..., on_data_loss="resnapshot") in a child process, paused at `pause_at`."""

    def __init__(self, orders: Orders, pause_at: str) -> None:
        self.root = orders.root
        args = {
            "pause_at": pause_at,
            "paused_file": str(self.root / "child.paused"),
            "go_file": str(self.root / "child.go"),
            "result_file": str(self.root / "child.result"),
            "warehouse": str(self.root / "child-warehouse"),
            "options": orders.options(),
            "target": orders.target,
            "app_id": orders.app_id,
            "checkpoint": str(orders.checkpoint),
            "facts": orders.facts,
            "kwargs": {
                "trigger": {"availableNow": True},
                "bootstrap": True,
                "on_data_loss": "resnapshot",
            },
        }
        (self.root / "child-args.json").write_text(json.dumps(args))
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.spark.support.race_child",
                str(self.root / "child-args.json"),
            ],
            cwd=REPO,
            env={k: v for k, v in os.environ.items() if k != "MSSQL_CDC_FAILPOINTS"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )

    def __enter__(self) -> Child:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process.poll() is None:  # a failed test must not leave the child waiting
            self.process.kill()
            self.process.communicate(timeout=120)

    def wait_paused(self) -> None:
        # A JVM starts in seconds on an idle machine, in minutes on a loaded 2-core one.
        deadline = time.monotonic() + 900
        while not (self.root / "child.paused").exists():
            if self.process.poll() is not None:
                _, err = self.process.communicate(timeout=120)
                raise AssertionError(f"the child ended before its pause: {err[-3000:]}")
            if time.monotonic() > deadline:
                raise AssertionError("the child did not reach its pause within 900 s")
            time.sleep(0.2)

    def go_and_finish(self) -> dict[str, Any]:
        (self.root / "child.go").write_text("go")
        _, err = self.process.communicate(timeout=600)
        assert self.process.returncode == 0, err[-3000:]
        result: dict[str, Any] = json.loads((self.root / "child.result").read_text())
        return result


def commits(orders: Orders, generation: int) -> set[str]:
    folder = orders.checkpoint / "_generations" / str(generation) / "commits"
    return {p.name for p in folder.iterdir() if p.name.isdigit()}


def recover_and_commit_a_batch(orders: Orders) -> None:
    """This process's side of the race: a whole recovery, then a batch of generation 1."""
    orders.run()
    orders.commit(("insert", 10, "late"))
    orders.run()


def assert_one_generation_and_right_tables(orders: Orders, committed: set[str]) -> None:
    state = orders.state()
    assert state is not None
    assert set(state) == {"generation", "snapshot_lsn", "commit_ts", "at"}
    assert state["generation"] == 1
    assert sorted(p.name for p in (orders.checkpoint / "_generations").iterdir()) == ["1"]
    assert committed <= commits(orders, 1)  # generation 1's batches were not reset
    [event] = orders.events("resnapshot")
    assert event["generation"] == 1
    assert event["min_lsn"] == state["snapshot_lsn"]  # the state and the event row agree
    assert (
        orders.rebuilt() == orders.source() == [(0, "new"), (1, "paid"), (2, "new"), (10, "late")]
    )
    assert not [p.name for p in orders.checkpoint.iterdir() if p.name.endswith((".lock", ".tmp"))]


def test_a_run_that_read_the_state_before_another_recovered_continues_that_generation(
    history: History,
) -> None:
    orders = restore(history.purged)
    with Child(orders, pause_at="read_state") as child:
        child.wait_paused()
        recover_and_commit_a_batch(orders)
        state, committed = orders.state(), commits(orders, 1)
        assert committed
        result = child.go_and_finish()
    assert result == {"query": "life-v1.g1", "error": None}
    assert orders.state() == state
    assert len(orders.snapshot_lsns()) == 2  # the bootstrap's and this process's: no third
    assert_one_generation_and_right_tables(orders, committed)


def test_a_run_that_recovered_after_another_committed_keeps_the_others_generation(
    history: History,
) -> None:
    orders = restore(history.purged)
    with Child(orders, pause_at="recovery.after_recovering") as child:
        child.wait_paused()  # the child wrote recovering and is about to take its snapshot
        recover_and_commit_a_batch(orders)
        state, committed = orders.state(), commits(orders, 1)
        result = child.go_and_finish()
    assert result == {"query": "life-v1.g1", "error": None}
    assert orders.state() == state
    assert len(orders.snapshot_lsns()) == 3  # the child's snapshot is the wasted one
    assert_one_generation_and_right_tables(orders, committed)
