"""The pre-flight's family cache on Spark (decision 0520): a steady-state to_delta call runs
no Spark job before its query starts, and a snapshot event another writer commits between two
calls is seen by the second.

Jobs are counted by Spark's status tracker under a job group set around the call; the query
start itself is replaced by a recorder, since starting a query runs jobs of its own.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from mssql_cdc import stream
from mssql_cdc.pipeline import cdc_stream
from tests.spark.support.facts_child import append_rows
from tests.spark.support.recovery_support import Orders

CACHE = "_mssql_cdc_family_cache.json"


@pytest.fixture
def orders(spark: SparkSession, tmp_path: Path) -> Orders:
    return Orders(spark, tmp_path / "s")


def facts_version(orders: Orders) -> int:
    return max(int(p.stem) for p in (Path(orders.facts) / "_delta_log").glob("*.json"))


def pre_flight_jobs(orders: Orders, monkeypatch: pytest.MonkeyPatch, **kw: Any) -> int:
    """The Spark jobs of one to_delta call up to its query start (which is only recorded).

    Without bootstrap: a generation-0 start with bootstrap=True looks for the newest known
    snapshot in bronze on every run, in either on_data_loss mode; that is not the pre-flight.
    """
    starts: list[str | None] = []
    monkeypatch.setattr(
        cdc_stream, "start_query", lambda spark, config, args, paths, start: starts.append(start)
    )
    context = orders.spark.sparkContext
    group = f"pre-flight-{len(starts)}-{id(kw)}"
    context.setJobGroup(group, "a to_delta pre-flight")
    try:
        stream(orders.spark, orders.options()).to_delta(
            orders.target, orders.app_id, str(orders.checkpoint), orders.facts,
            on_data_loss="resnapshot", **kw,
        )  # fmt: skip
    finally:
        context.setJobGroup("idle", "after the pre-flight")
        monkeypatch.undo()
    assert len(starts) == 1
    return len(context.statusTracker().getJobIdsForGroup(group))


def settled(orders: Orders) -> None:
    """A bootstrapped stream with batches since: its facts hold snapshot rows and batches."""
    orders.orders(3)
    orders.run()
    for key in (3, 4):  # each run's pre-flight caches; each batch then commits facts
        orders.commit(("insert", key, "new"))
        orders.run()


def test_the_steady_state_pre_flight_runs_no_spark_job(
    orders: Orders, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    settled(orders)
    cached = json.loads((orders.checkpoint / CACHE).read_text())
    assert cached["version"] < facts_version(orders)  # the last batch committed facts since
    with caplog.at_level(logging.DEBUG, logger="mssql_cdc.facts.family_cache"):
        assert pre_flight_jobs(orders, monkeypatch) == 0
    assert "stale" not in caplog.text  # the sink's own commits kept the cache valid
    assert json.loads((orders.checkpoint / CACHE).read_text())["version"] == facts_version(orders)
    assert pre_flight_jobs(orders, monkeypatch) == 0


def open_row(orders: Orders, *, mode: str, generation: int, s: str) -> dict[str, Any]:
    """A `snapshot_open` row as spec 30 section 3.6 gives it, written by hand."""
    moment = orders.commit_time(s)
    return {
        "app_id": orders.app_id if generation == 0 else f"{orders.app_id}.g{generation}",
        "generation": generation,
        "rows": 0,
        "min_lsn": s,
        "max_lsn": s,
        "end_lsn": s,
        "min_commit_ts": moment,
        "max_commit_ts": moment,
        "event": "snapshot_open",
        "detail": json.dumps({"mode": mode, "kind": "resnapshot", "generation": generation}),
        "target": orders.target,
        "written_at": "2026-10-05T00:00:00",
    }


def test_a_chunked_open_another_process_commits_is_seen_by_the_next_calls_mode_lock(
    orders: Orders, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    settled(orders)
    assert pre_flight_jobs(orders, monkeypatch) == 0  # the cache is valid here
    s = orders.commit(("insert", 5, "new"))
    args = {
        "warehouse": str(tmp_path / "child"),
        "facts": orders.facts,
        "rows": [open_row(orders, mode="chunked", generation=1, s=s)],
    }
    (tmp_path / "args.json").write_text(json.dumps(args))
    subprocess.run(
        [sys.executable, "-m", "tests.spark.support.facts_child", str(tmp_path / "args.json")],
        check=True,
        timeout=600,
        cwd=Path(__file__).resolve().parents[3],
    )
    with pytest.raises(ValueError, match=f"a chunked snapshot open at {s} \\(generation 1\\)"):
        orders.to_delta()
    assert orders.spark.streams.active == []


def test_a_full_open_another_writer_commits_is_seen_by_the_next_calls_mode_lock(
    orders: Orders, monkeypatch: pytest.MonkeyPatch
) -> None:
    settled(orders)
    assert pre_flight_jobs(orders, monkeypatch) == 0
    s = orders.commit(("insert", 5, "new"))
    append_rows(orders.spark, orders.facts, [open_row(orders, mode="full", generation=0, s=s)])
    with pytest.raises(ValueError, match=f"a full snapshot open at {s} \\(generation 0\\)"):
        orders.to_delta(snapshot="chunked")
    assert orders.spark.streams.active == []
