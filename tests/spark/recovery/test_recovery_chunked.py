"""Chunked snapshots inside to_delta: the bootstrap in waves, a loss while one is open, and the
mode lock after a crashed full snapshot (the recovery's acceptance tests 9 to 11, on the
emulator; the chunked situations of the dry run, test 12, sit in tests 10 and 11 here).

Each test ends with bronze's latest image, rebuilt in plain Python by the rule of
docs/data-loss.md (`recovery_support.rebuild`), equal to the emulator's rows.

Where the acceptance tests leave the setup open, these do what a user of a real server would
see. Hooks that commit (`commit_before_read`) get a time on the history's own clock: without
one the emulator takes the wall clock, and later commits of the history would go back in time.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from mssql_cdc import DataLossError, stream
from mssql_cdc.core import clock as _clock
from mssql_cdc.testing import clock
from tests.spark.recovery.test_crash_matrix import crash
from tests.spark.recovery.test_recovery import twin_lsn_of_the_next_commit
from tests.spark.support.chunked_support import (
    acted_start,
    backfill,
    bronze_version,
    chunked_resnapshot_of_the_newer_instance,
    details,
    dry_plan,
    op0,
    progress,
    states_written,
)
from tests.spark.support.recovery_support import Orders, at

CHUNKED = {"snapshot": "chunked", "on_data_loss": "fail"}


def change(op: str, key: int, status: str | None = None) -> tuple[str, int, str | None]:
    """A change as `Orders.commit` takes it."""
    return (op, key, status)


def raw(op: str, key: int, status: str | None = None) -> Any:
    """A change as the emulator's hooks take it."""
    values: dict[str, object] = {"order_id": key}
    if status is not None:
        values["status"] = status
    return (op, "dbo.orders", values)


def next_minute(orders: Orders) -> str:
    """A hook's commit time on the history's clock (without one it would take the wall clock)."""
    orders.minute += 1
    return at(orders.minute)


def lock_text(orders: Orders, s: str, generation: int = 0) -> str:
    return (
        f"{orders.target}: a chunked snapshot open at {s} (generation {generation}) has not "
        "completed; this run cannot use snapshot='full'."
    )


def test_a_chunked_bootstrap_in_waves_tiles_the_keys_and_rebuilds_the_source(
    spark: SparkSession, tmp_path: Path
) -> None:
    orders = Orders(spark, tmp_path, app_id="waves-v1", extra={"numPartitions": "2"})
    orders.orders(8)
    orders.run(**CHUNKED)
    assert orders.bronze() == []
    [opened] = orders.events("snapshot_open")
    s = opened["min_lsn"]
    detail = json.loads(opened["detail"])
    assert (detail["mode"], detail["kind"], detail["generation"]) == ("chunked", "bootstrap", 0)
    assert detail["keys"] == ["order_id"]
    assert detail["plan"] == {"kind": "int", "lo": 0, "hi": 7, "rows": 8}
    with pytest.raises(ValueError, match="has not completed") as refused:
        orders.to_delta(on_data_loss="fail")  # a full-mode bootstrap
    assert str(refused.value).startswith(lock_text(orders, s))
    with pytest.raises(ValueError, match="has not completed") as refused:
        stream(spark, orders.options()).snapshot(
            orders.target, app_id=orders.app_id, facts_table=orders.facts
        )
    assert str(refused.value).startswith(lock_text(orders, s))
    assert orders.events("snapshot_open") == [opened]

    orders.commit(change("update", 1, "paid"))
    orders.emu.commit_before_read(
        [raw("delete", 3), raw("insert", 9, "new")], at=next_minute(orders)
    )
    first = backfill(orders, chunk_rows=2, max_waves=1)
    assert progress(first) == (2, 4, False, "running")
    assert first["snapshot"] == s
    assert orders.emu.pending_hooks() == []
    orders.run(**CHUNKED)
    orders.commit(change("delete", 6))
    orders.emu.commit_before_read(
        [raw("update", 0, "late"), raw("insert", 6, "new")], at=next_minute(orders)
    )
    assert progress(backfill(orders)) == (4, 4, True, "done")
    orders.run(**CHUNKED)

    chunks = details(orders, "snapshot_chunk")
    assert sorted((c["chunk"], c["wave"], c["lo"], c["hi"], c["last"]) for c in chunks) == [
        (0, 0, None, 2, False),
        (1, 0, 2, 4, False),
        (2, 1, 4, 6, False),
        (3, 1, 6, 8, True),
    ]
    [wave0_stamp] = {c["_min_lsn"] for c in chunks if c["wave"] == 0}
    [delete3] = [
        r for r in orders.emu.change_rows("dbo_orders")
        if r["order_id"] == 3 and r["__$operation"] == 1
    ]  # fmt: skip
    assert str(delete3["__$start_lsn"]) > wave0_stamp  # the hook fired after the wave's stamp
    [plan] = details(orders, "snapshot_plan")
    assert plan["snapshot"] == s
    assert plan["chunks"] == [[None, 2], [2, 4], [4, 6], [6, 8]]
    [done] = details(orders, "bootstrap")
    assert (done["_app_id"], done["_min_lsn"], done["_max_lsn"]) == ("waves-v1", s, s)
    assert done["_rows"] == sum(c["_rows"] for c in chunks)
    snapshot_rows = op0(orders)
    assert snapshot_rows
    assert all(r["_snapshot"] == s and r["_start_lsn"] >= s for r in snapshot_rows)
    assert orders.rebuilt() == orders.source()
    assert orders.source() == [(0, "late"), (1, "paid"), (2, "new"), (4, "new"), (5, "new"),
                               (6, "new"), (7, "new"), (9, "new")]  # fmt: skip

    version, facts = bronze_version(orders), len(orders.facts_rows())
    assert progress(backfill(orders)) == (4, 4, True, "done")
    assert (bronze_version(orders), len(orders.facts_rows())) == (version, facts)
    orders.run(on_data_loss="fail")  # a full bootstrap now finds S: opens and reads nothing
    assert len(orders.events("snapshot_open")) == 1
    assert len(op0(orders)) == len(snapshot_rows)
    assert stream(spark, orders.options()).snapshot(orders.target)["lsn"] == s
    assert orders.rebuilt() == orders.source()


def test_the_headroom_throttle_moves_from_no_snapshot_to_done(
    spark: SparkSession, tmp_path: Path
) -> None:
    orders = Orders(spark, tmp_path, app_id="throttle-v1")
    orders.orders(3)

    def throttled(threshold: float) -> str:
        return backfill(orders, min_headroom_hours=threshold)["state"]

    assert throttled(1) == "no_snapshot"
    orders.run(**CHUNKED)
    batches = [f for f in orders.facts_rows() if f["event"] is None]
    assert [f["retention_headroom_hours"] for f in batches if f["rows"]] == []
    assert throttled(1) == "waiting_metrics"
    # Cleanup in its steady state: the watermark is a commit with a known time, so the next
    # batch has a headroom (a just-enabled instance's start LSN has none).
    orders.emu.cleanup("dbo_orders", min(orders.times))
    orders.commit(change("insert", 3, "new"))
    orders.run(**CHUNKED)
    [batch] = [f for f in orders.facts_rows() if f["event"] is None and f["rows"]]
    assert 0.01 < batch["retention_headroom_hours"] < 1
    assert throttled(1) == "waiting_headroom"
    with clock(_clock.now() + timedelta(hours=1)):
        assert throttled(0.01) == "waiting_headroom"
    assert orders.events("snapshot_chunk") == []
    assert throttled(0.01) == "done"
    orders.run(**CHUNKED)
    assert orders.rebuilt() == orders.source() == [(0, "new"), (1, "new"), (2, "new"), (3, "new")]


def test_a_loss_while_a_chunked_snapshot_is_open_opens_a_newer_one_in_the_next_generation(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    orders = Orders(spark, tmp_path, app_id="open-v1")
    orders.orders(6)
    orders.run(snapshot="chunked")
    [first] = orders.events("snapshot_open")
    s1 = first["min_lsn"]
    insert6 = orders.commit(change("insert", 6, "new"))
    orders.run(snapshot="chunked")
    assert backfill(orders, chunk_rows=2, max_waves=1)["state"] == "running"
    orders.commit(change("update", 1, "paid"))
    orders.commit(change("delete", 2))
    orders.cleanup_past_everything()

    plan = dry_plan(orders, snapshot="chunked", bootstrap=True)
    assert (plan["action"], plan["next_generation"], plan["reuse"]) == ("resnapshot", 1, None)
    with states_written(monkeypatch) as written:
        query = orders.run(snapshot="chunked")
    assert query.name == "open-v1.g1"
    assert acted_start(written) == plan["start"]
    assert plan["start"] == {"lsn": insert6, "commit_ts": orders.commit_time(insert6)}
    [second] = [o for o in orders.events("snapshot_open") if o["generation"] == 1]
    detail = json.loads(second["detail"])
    assert second["app_id"] == "open-v1.g1"
    assert (detail["mode"], detail["kind"]) == ("chunked", "resnapshot")
    assert second["lost_from_ts"].isoformat(timespec="milliseconds") == orders.commit_time(insert6)
    assert second["lost_to_ts"] is not None
    s2 = second["min_lsn"]
    assert int(s2, 16) > int(s1, 16)
    state = orders.state()
    assert state is not None
    assert (state["generation"], state["snapshot_lsn"]) == (1, s2)
    assert orders.events("resnapshot") == []
    orders.run(snapshot="chunked")
    assert len(orders.events("snapshot_open")) == 2

    status = backfill(orders)
    assert (status["snapshot"], status["state"]) == (s2, "done")
    [event] = orders.events("resnapshot")
    assert (event["app_id"], event["min_lsn"], event["max_lsn"]) == ("open-v1.g1", s2, s2)
    assert orders.events("bootstrap") == []
    orders.run(snapshot="chunked")
    assert orders.rebuilt() == orders.source()
    assert 2 not in dict(orders.source())


@pytest.mark.parametrize("how", ["raise", "kill"])
def test_a_crashed_full_bootstrap_locks_out_chunked_runs_until_a_full_rerun_completes_it(
    spark: SparkSession, tmp_path: Path, how: str
) -> None:
    orders = Orders(spark, tmp_path, app_id="lock-v1")
    orders.orders(3)
    crash(orders, "snapshot.before_append", how)
    [opened] = orders.events("snapshot_open")
    assert json.loads(opened["detail"])["mode"] == "full"
    assert op0(orders) == []
    assert orders.events("bootstrap") == []

    plan = dry_plan(orders, snapshot="chunked", bootstrap=True)
    assert plan["action"] == "blocked"
    assert "snapshot='full'" in plan["reason"]
    with pytest.raises(ValueError, match="snapshot='full'") as refused:
        orders.to_delta(snapshot="chunked")
    assert str(refused.value) == plan["reason"]
    with pytest.raises(ValueError, match="snapshot='full'"):
        backfill(orders)
    assert spark.streams.active == []

    orders.run()
    [done] = orders.events("bootstrap")
    assert done["rows"] == 3
    orders.commit(change("update", 0, "paid"))
    orders.run(snapshot="chunked")
    opens = orders.events("snapshot_open")
    assert [json.loads(o["detail"])["mode"] for o in opens] == ["full", "full"]
    assert len(orders.snapshot_lsns()) == 1
    assert len(op0(orders)) == 3
    assert orders.rebuilt() == orders.source() == [(0, "paid"), (1, "new"), (2, "new")]


def test_after_a_purged_full_re_snapshot_a_chunked_rerun_takes_its_generation_over(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Immediate: the cleanup during the read names the LSN a twin emulator predicts for a
    # commit, which the realistic profile has not captured when the hook fires.
    orders = Orders(spark, tmp_path, profile="immediate")
    orders.orders(3)
    orders.run(bootstrap=False)
    orders.commit(change("delete", 0))
    orders.cleanup_past_everything()
    insert5_at = "2026-10-05T00:00:00"
    insert5 = twin_lsn_of_the_next_commit(orders, tmp_path / "twin", insert5_at)
    orders.emu.commit_before_read([raw("insert", 5, "new")], at=insert5_at)
    orders.emu.cleanup_during_read("dbo_orders", insert5, read="table")
    with pytest.raises(DataLossError, match="took longer"):
        orders.to_delta(bootstrap=False)
    [full] = orders.events("snapshot_open")
    assert (full["generation"], json.loads(full["detail"])["mode"]) == (1, "full")

    plan = dry_plan(orders, snapshot="chunked", resnapshot_interval_days=0)
    assert (plan["action"], plan["next_generation"], plan["reuse"]) == ("resnapshot", 1, None)
    with states_written(monkeypatch) as written:
        query = orders.run(bootstrap=False, snapshot="chunked", resnapshot_interval_days=0)
    assert query.name == "life-v1.g1"
    assert acted_start(written) == plan["start"]
    [opened] = [o for o in orders.events("snapshot_open") if o["min_lsn"] != full["min_lsn"]]
    detail = json.loads(opened["detail"])
    assert (detail["mode"], detail["kind"], opened["generation"]) == ("chunked", "resnapshot", 1)
    assert opened["app_id"] == "life-v1.g1"
    s = opened["min_lsn"]
    state = orders.state()
    assert state is not None
    assert (state["generation"], state["snapshot_lsn"]) == (1, s)
    assert set(state) == {"generation", "snapshot_lsn", "commit_ts", "at"}

    assert progress(backfill(orders)) == (1, 1, True, "done")
    [event] = orders.events("resnapshot")
    assert (event["app_id"], event["min_lsn"], event["max_lsn"]) == ("life-v1.g1", s, s)
    orders.run(bootstrap=False, snapshot="chunked")
    assert orders.rebuilt() == orders.source() == [(1, "new"), (2, "new"), (5, "new")]


def test_a_disabled_instance_holding_unread_changes_opens_a_chunked_snapshot_of_its_newer_one(
    spark: SparkSession, tmp_path: Path
) -> None:
    orders = Orders(spark, tmp_path, app_id="switch-v1")
    orders.orders(3)
    orders.run(snapshot="chunked")
    assert backfill(orders)["state"] == "done"
    newer = orders.switch_instance_over(change("update", 1, "paid"), change("delete", 2))

    chunked_resnapshot_of_the_newer_instance(orders, newer)
    assert orders.rebuilt() == orders.source() == [(0, "new"), (1, "paid"), (100, "after")]
