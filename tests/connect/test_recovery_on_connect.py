"""The recovery lifecycle on a Spark Connect session, snapshot="full" (docs/spark-connect.md).

A stream bootstraps, CDC cleanup deletes changes it had not read, `on_data_loss="fail"` stops
the query with the loss, `plan_recovery()` and `mssql-cdc plan` (a client process of its own,
through SPARK_REMOTE) say what a recovering run would do, and `on_data_loss="resnapshot"`
recovers. Bronze's latest image, rebuilt in plain Python, equals the emulator's table.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import SparkSession

from mssql_cdc import is_data_loss, stream
from tests.spark.support.recovery_support import Orders

# set in this process, which hosts the server; a user's shell holds only SPARK_REMOTE
LOCAL_SERVER_ENV = ("SPARK_LOCAL_REMOTE", "SPARK_CONNECT_MODE_ENABLED")


def cli_plan(orders: Orders, spark: SparkSession) -> tuple[int, dict[str, object], str]:
    """`mssql-cdc plan --json` in a new process, a Connect client of this test's server."""
    options = orders.root / "options.json"
    options.write_text(json.dumps(orders.options()))
    argv = [
        sys.executable, "-m", "mssql_cdc.cli", "plan", "--options", str(options),
        "--target", orders.target, "--app-id", orders.app_id, "--checkpoint",
        str(orders.checkpoint), "--facts", orders.facts, "--bootstrap", "--json",
    ]  # fmt: skip
    # the child inherits SPARK_CONNECT_AUTHENTICATE_TOKEN, the server's token
    port = spark.conf.get("spark.connect.grpc.binding.port")
    env = {k: v for k, v in os.environ.items() if k not in LOCAL_SERVER_ENV}
    env["SPARK_REMOTE"] = f"sc://localhost:{port}"
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, check=False)
    return done.returncode, json.loads(done.stdout) if done.stdout else {}, done.stderr


def test_a_stream_that_lost_changes_to_cleanup_recovers_by_a_full_resnapshot(
    spark: SparkSession, tmp_path: Path
) -> None:
    orders = Orders(spark, tmp_path / "stream", app_id="connect-v1")
    orders.orders(3)
    query = orders.run()
    assert query.name == "connect-v1"
    [bootstrap] = orders.events("bootstrap")
    assert (bootstrap["app_id"], bootstrap["rows"]) == ("connect-v1", 3)
    assert bootstrap["batch_id"] is None
    assert {r["_start_lsn"] for r in orders.bronze() if r["_operation"] == 0} == {
        bootstrap["max_lsn"]
    }
    insert3 = orders.commit(("insert", 3, "new"))
    orders.run()
    batches = [f for f in orders.facts_rows() if f["event"] is None and f["rows"] > 0]
    assert [(b["app_id"], b["rows"], b["min_lsn"], b["max_lsn"]) for b in batches] == [
        ("connect-v1", 1, insert3, insert3)
    ]
    assert orders.rebuilt() == orders.source() == [(0, "new"), (1, "new"), (2, "new"), (3, "new")]

    orders.commit(("update", 1, "paid"))
    orders.commit(("delete", 2, None))
    orders.cleanup_past_everything()
    assert orders.emu.min_lsn("dbo_orders") > insert3
    with pytest.raises(StreamingQueryException) as failed:
        orders.run(on_data_loss="fail")
    assert is_data_loss(failed.value)
    assert "capture instance 'dbo_orders': changes from" in str(failed.value)
    assert orders.state() is None

    facts_before = len(orders.facts_rows())
    plan = stream(spark, orders.options()).plan_recovery(
        orders.target, orders.app_id, str(orders.checkpoint), orders.facts, bootstrap=True
    )
    assert (plan["action"], plan["generation"], plan["next_generation"]) == ("resnapshot", 0, 1)
    assert plan["start"] == {"lsn": insert3, "commit_ts": orders.commit_time(insert3)}
    code, printed, err = cli_plan(orders, spark)
    assert (code, printed, err.strip()) == (10, dict(plan), "")
    assert len(orders.facts_rows()) == facts_before  # neither plan wrote anything
    assert orders.state() is None

    query = orders.run()
    assert query.name == "connect-v1.g1"
    state = orders.state()
    assert state is not None
    assert state["generation"] == 1
    [event] = orders.events("resnapshot")
    assert (event["app_id"], event["rows"], event["max_lsn"]) == (
        "connect-v1.g1",
        3,
        state["snapshot_lsn"],
    )
    assert event["lost_from_ts"].isoformat(timespec="milliseconds") == orders.commit_time(insert3)
    assert orders.rebuilt() == orders.source() == [(0, "new"), (1, "paid"), (3, "new")]

    orders.commit(("update", 0, "paid"))
    orders.run()
    assert orders.rebuilt() == orders.source() == [(0, "paid"), (1, "paid"), (3, "new")]
    assert stream(spark, orders.options()).snapshot(orders.target)["lsn"] == state["snapshot_lsn"]
    newest = stream(spark, orders.options()).snapshot(orders.target, resnapshot=True)
    assert newest["lsn"] > state["snapshot_lsn"]
    assert orders.snapshot_lsns() == {bootstrap["max_lsn"], state["snapshot_lsn"], newest["lsn"]}
    assert orders.rebuilt() == orders.source()
