"""plan_recovery() as a dry run, the snapshot-duration guard and the headroom forecast (the
recovery's acceptance tests 12 and 13; the chunked situations of test 12 are in
test_recovery_chunked.py).

Every plan is taken through one helper, `chunked_support.dry_plan`, which checks that the call
changed nothing (the facts row count, bronze's version and the state file's bytes are
unchanged, a table-read hook is still pending); each plan's `start` is then compared with the
`recovering` offset the next to_delta records, seen by wrapping `recovery.replace_state`. The
situations of tests 1 and 2 share one history: the manual snapshot of test 2 is taken after
test 1's anti-loop refusal, which its reuse then bypasses.

Where the acceptance tests leave the setup open, these do what a user of a real server would
see. The throttle's `waiting_headroom` needs a micro-batch with a headroom, and a just-enabled
instance's start LSN has no commit time, so the test first raises the cleanup mark to the
first commit, as a cleanup job in its steady state has done. The duration guard's metadata
count of 1,000,000 rows is the observer's `row_count` patched (the emulator counts exactly);
its bootstrap and micro-batch rows are appended to the real facts table. The forecast's rows
belong to generation 1 of a stream with no checkpoint, because rows of the live sink id
without Spark's commits are what the path-sanity guard refuses.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from mssql_cdc import DataLossError, stream
from mssql_cdc.core import clock as _clock
from mssql_cdc.facts.rows import FactsRow, append_facts
from mssql_cdc.recovery.observer import BackendObserver
from mssql_cdc.tables import refs as tables
from tests.spark.support.chunked_support import acted_start, dry_plan, op0, states_written
from tests.spark.support.recovery_support import Orders, at


def change(op: str, key: int, status: str | None = None) -> tuple[str, int, str | None]:
    return (op, key, status)


def test_plan_recovery_changes_nothing_and_says_what_the_next_to_delta_does(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    orders = Orders(spark, tmp_path)
    orders.orders(3)
    orders.run()
    insert3 = orders.commit(change("insert", 3, "new"))
    quiet = dry_plan(orders, bootstrap=True)
    assert (quiet["action"], quiet["generation"], quiet["next_generation"]) == ("none", 0, 0)
    assert quiet["reuse"] is None
    with states_written(monkeypatch) as written:
        assert orders.run().name == "life-v1"
    assert written == []

    orders.commit(change("update", 1, "paid"))
    orders.commit(change("delete", 2))
    orders.cleanup_past_everything()
    plan = dry_plan(orders, bootstrap=True)
    assert (plan["action"], plan["next_generation"], plan["interval_ok"]) == ("resnapshot", 1, True)
    assert plan["reuse"] is None
    before = orders.snapshot_lsns()
    with states_written(monkeypatch) as written:
        assert orders.run().name == "life-v1.g1"
    assert acted_start(written) == plan["start"]
    assert plan["start"] == {"lsn": insert3, "commit_ts": orders.commit_time(insert3)}
    state = orders.state()
    assert state is not None
    assert state["generation"] == plan["next_generation"]
    assert state["snapshot_lsn"] not in before  # no reuse: a new snapshot was taken
    [event] = orders.events("resnapshot")
    assert event["rows"] == 3

    orders.commit(change("insert", 7, "new"))
    orders.cleanup_past_everything()
    blocked = dry_plan(orders, bootstrap=True)
    assert (blocked["action"], blocked["interval_ok"]) == ("blocked", False)
    with pytest.raises(DataLossError) as refused:
        orders.to_delta()
    assert str(refused.value) == blocked["reason"]

    # Test 2's situation: a snapshot taken by hand after the loss is reused (no guard).
    manual = stream(spark, orders.options()).snapshot(orders.target, resnapshot=True)
    reuse = dry_plan(orders, bootstrap=True)
    assert (reuse["action"], reuse["next_generation"]) == ("resnapshot", 2)
    assert reuse["reuse"] is not None
    assert (reuse["reuse"]["kind"], reuse["reuse"]["lsn"]) == ("target", manual["lsn"])
    rows_before = len(op0(orders))
    with states_written(monkeypatch) as written:
        assert orders.run().name == "life-v1.g2"
    assert acted_start(written) == reuse["start"]
    state = orders.state()
    assert state is not None
    assert (state["generation"], state["snapshot_lsn"]) == (2, manual["lsn"])
    assert len(op0(orders)) == rows_before  # reused: nothing read again
    [reused] = [e for e in orders.events("resnapshot") if e["generation"] == 2]
    assert (reused["rows"], reused["duration_ms"]) == (None, None)
    assert orders.rebuilt() == orders.source() == [(0, "new"), (1, "paid"), (3, "new"), (7, "new")]


def _now() -> datetime:
    return _clock.now().replace(tzinfo=None, microsecond=0)


def test_the_duration_guard_warns_and_with_refuse_blocks_a_full_re_snapshot_too_slow_to_fit(
    spark: SparkSession,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    orders = Orders(spark, tmp_path, app_id="guard-v1")
    orders.orders(3)
    orders.minute = 300  # five hours of history: the real batches show more than 1 h
    orders.emu.idle(at=at(orders.minute))
    orders.run(bootstrap=False)
    first = min(orders.times)
    orders.commit(change("delete", 0))
    orders.cleanup_past_everything()
    now = _now()
    append_facts(
        spark,
        orders.facts,
        [
            FactsRow(
                app_id="guard-v1", generation=0, event="bootstrap", rows=1000,
                duration_ms=10_000, min_lsn=first, max_lsn=first, end_lsn=first,
                target=orders.target, written_at=now,
            ),  # 100 rows/s
            FactsRow(
                app_id="guard-v1", generation=0, batch_id=0, rows=0, target=orders.target,
                source_max_commit_ts=now, retention_watermark_ts=now - timedelta(hours=1),
                written_at=now,
            ),  # a 1 h retention
        ],
        key=None,
    )  # fmt: skip
    monkeypatch.setattr(BackendObserver, "row_count", lambda self: 1_000_000)

    plan = dry_plan(orders)
    assert plan["action"] == "resnapshot"
    assert plan["estimate"] == {
        "rows": 1_000_000, "rows_per_second": 100.0, "seconds": 10_000.0,
        "retention_hours": 1.0, "fits": False,
    }  # fmt: skip

    orders.extra["snapshotDurationGuard"] = "refuse"
    refusal = dry_plan(orders)
    assert refusal["action"] == "blocked"
    facts_before = len(orders.facts_rows())
    with pytest.raises(DataLossError) as refused:
        orders.to_delta(bootstrap=False)
    text = str(refused.value)
    assert text == refusal["reason"]
    assert "more than half the observed CDC retention" in text
    assert "snapshot='chunked'" in text
    assert orders.state() is None  # no recovering, and not a failed attempt
    assert len(orders.facts_rows()) == facts_before
    assert orders.events("snapshot_open") == []
    assert op0(orders) == []

    del orders.extra["snapshotDurationGuard"]
    with caplog.at_level(logging.WARNING, logger="mssql_cdc.recovery.preflight"):
        orders.run(bootstrap=False)
    [warning] = [
        r.getMessage()
        for r in caplog.records
        if r.name == "mssql_cdc.recovery.preflight" and r.levelname == "WARNING"
    ]
    assert "consider snapshot='chunked'" in warning
    state = orders.state()
    assert state is not None
    assert state["generation"] == 1
    assert orders.rebuilt() == orders.source() == [(1, "new"), (2, "new")]


def test_the_headroom_forecast_finds_where_falling_headroom_reaches_zero(
    spark: SparkSession, tmp_path: Path
) -> None:
    orders = Orders(spark, tmp_path, app_id="trend-v1")
    now = _now()
    zero = now + timedelta(hours=5, minutes=17)  # the line: 2 h of headroom lost per hour
    samples: list[tuple[datetime, float]] = []
    for k in range(8):
        written = now - timedelta(hours=7 - k)
        noise = 0.01 if k % 2 else -0.01
        samples.append((written, round(2 * (zero - written).total_seconds() / 3600 + noise, 2)))
    tables.ensure_table(spark, orders.facts, "facts")
    # Batches of generation 1 with no checkpoint here: rows of the live sink id (generation 0)
    # would meet the path-sanity guard, batches without Spark's commits.
    rows: list[Any] = [
        FactsRow(
            app_id="trend-v1.g1", generation=1, batch_id=k, rows=1, target=orders.target,
            retention_headroom_hours=headroom, written_at=written,
        )
        for k, (written, headroom) in enumerate(samples)
    ]  # fmt: skip
    append_facts(spark, orders.facts, rows, key=None)

    plan = dry_plan(orders)
    assert plan["action"] == "none"
    forecast = plan["forecast"]
    assert forecast["samples"] == 8
    assert forecast["trend_hours_per_day"] == pytest.approx(-48, abs=0.5)
    assert forecast["loss_by_trend_at"] is not None
    found = datetime.fromisoformat(forecast["loss_by_trend_at"]).replace(tzinfo=None)
    assert abs((found - zero).total_seconds()) <= 60
    newest_at, newest = samples[-1]
    expected_stop = newest_at + timedelta(hours=newest)
    assert forecast["loss_if_stopped_at"] is not None
    stopped = datetime.fromisoformat(forecast["loss_if_stopped_at"]).replace(tzinfo=None)
    assert abs((stopped - expected_stop).total_seconds()) <= 1
