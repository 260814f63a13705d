"""to_delta(..., on_data_loss="resnapshot") end to end on the emulator (spec 30 section 9).

Each test ends with bronze's latest image, rebuilt in plain Python by the rule of section 1,
equal to the emulator's rows. Losses are made as a user meets them: the stream stops, the
table changes, time passes beyond the retention and the cleanup job runs.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import SparkSession

from mssql_cdc import DataLossError, is_data_loss, stream
from mssql_cdc.recovery.observer import BackendObserver
from tests.spark.support.recovery_support import Orders


@pytest.fixture
def orders(spark: SparkSession, tmp_path: Path) -> Orders:
    return Orders(spark, tmp_path)


def test_the_lifecycle_bootstrap_loss_resnapshot_guard_and_override(
    orders: Orders, caplog: pytest.LogCaptureFixture
) -> None:
    orders.orders(3)
    orders.run()
    [bootstrap] = orders.events("bootstrap")
    assert (bootstrap["app_id"], bootstrap["rows"], bootstrap["batch_id"]) == ("life-v1", 3, None)
    assert bootstrap["lost_from_ts"] is None
    assert bootstrap["lost_to_ts"] is None
    snapshot_rows = [r for r in orders.bronze() if r["_operation"] == 0]
    assert len(snapshot_rows) == 3
    assert {r["_start_lsn"] for r in snapshot_rows} == {bootstrap["max_lsn"]}
    assert orders.state() is None
    insert3 = orders.commit(("insert", 3, "new"))
    orders.run()

    orders.commit(("update", 1, "paid"))
    orders.commit(("delete", 2, None))
    mark = orders.cleanup_past_everything()
    assert orders.emu.min_lsn("dbo_orders") > insert3
    orders.emu.inject_null_row(read="table")  # a table read by the dry run would consume it
    facts_before = len(orders.facts_rows())
    bronze_before = len(list((Path(orders.target) / "_delta_log").glob("*.json")))
    plan = stream(orders.spark, orders.options()).plan_recovery(
        orders.target, "life-v1", str(orders.checkpoint), orders.facts, bootstrap=True
    )
    assert (plan["action"], plan["next_generation"], plan["interval_ok"]) == ("resnapshot", 1, True)
    assert plan["start"] == {"lsn": insert3, "commit_ts": orders.commit_time(insert3)}
    assert len(orders.emu.pending_hooks()) == 1
    orders.emu.clear_hooks()
    assert len(orders.facts_rows()) == facts_before
    assert len(list((Path(orders.target) / "_delta_log").glob("*.json"))) == bronze_before
    assert orders.state() is None
    with caplog.at_level(logging.INFO, logger="mssql_cdc.recovery.preflight"):
        query = orders.run()
    assert query.name == "life-v1.g1"
    state = orders.state()
    assert state is not None
    assert state["generation"] == 1
    assert set(state) == {"generation", "snapshot_lsn", "commit_ts", "at"}
    assert len(orders.snapshot_lsns()) == 2
    [event] = orders.events("resnapshot")
    assert event["app_id"] == "life-v1.g1"
    assert event["rows"] == 3
    assert event["max_lsn"] == state["snapshot_lsn"]
    low_time = orders.commit_time(orders.emu.min_lsn("dbo_orders"))
    assert event["lost_from_ts"].isoformat(timespec="milliseconds") == orders.commit_time(insert3)
    assert event["lost_to_ts"].isoformat(timespec="milliseconds") == low_time
    assert event["retention_watermark_ts"] == event["lost_to_ts"]
    assert mark >= orders.emu.min_lsn("dbo_orders")
    messages = [
        (r.levelname, r.getMessage())
        for r in caplog.records
        if r.name == "mssql_cdc.recovery.preflight"
    ]
    # The loss, the snapshot the generation starts from, the switch (decision 0920's steps).
    assert [level for level, _ in messages] == ["WARNING", "INFO", "INFO"]
    assert "generation 1, sink app_id life-v1.g1" in messages[0][1]
    assert f"the snapshot generation 1 starts from is at {state['snapshot_lsn']}" in messages[1][1]
    assert orders.rebuilt() == orders.source() == [(0, "new"), (1, "paid"), (3, "new")]

    orders.commit(("update", 0, "paid"))
    orders.commit(("delete", 3, None))
    orders.run(on_data_loss="fail")
    assert len(orders.snapshot_lsns()) == 2
    assert len(orders.events("resnapshot")) == 1
    assert {f["app_id"] for f in orders.facts_rows() if f["event"] is None} >= {"life-v1.g1"}
    assert orders.rebuilt() == orders.source() == [(0, "paid"), (1, "paid")]
    assert not [r for r in orders.bronze() if r["order_id"] == 2 and r["_operation"] == 1]

    orders.commit(("insert", 7, "new"))
    orders.cleanup_past_everything()
    plan = stream(orders.spark, orders.options()).plan_recovery(
        orders.target, "life-v1", str(orders.checkpoint), orders.facts, bootstrap=True
    )
    assert (plan["action"], plan["interval_ok"]) == ("blocked", False)
    state_before, facts_before = orders.state_file.read_bytes(), len(orders.facts_rows())
    with pytest.raises(DataLossError, match="resnapshot_interval_days"):
        orders.to_delta()
    assert orders.spark.streams.active == []
    assert orders.state_file.read_bytes() == state_before
    assert len(orders.facts_rows()) == facts_before

    orders.run(resnapshot_interval_days=0)
    state = orders.state()
    assert state is not None
    assert state["generation"] == 2
    assert len(orders.snapshot_lsns()) == 3
    assert {e["app_id"] for e in orders.events("resnapshot")} == {"life-v1.g1", "life-v1.g2"}
    assert orders.rebuilt() == orders.source() == [(0, "paid"), (1, "paid"), (7, "new")]

    # Three generations on disk: gc removes the older ones and the live one runs on.
    ckpt = orders.checkpoint
    (ckpt / "notes.txt").write_text("the operator's own file")
    before = sorted(p.relative_to(ckpt).as_posix() for p in ckpt.rglob("*"))
    assert gc_cli([str(ckpt), "--dry-run"]) == 0
    assert sorted(p.relative_to(ckpt).as_posix() for p in ckpt.rglob("*")) == before
    assert gc_cli([str(ckpt), "--keep", "2"]) == 0
    assert not (ckpt / "offsets").exists()
    assert not (ckpt / "metadata").exists()
    assert (ckpt / "_generations" / "1" / "offsets").is_dir()
    assert gc_cli([str(ckpt)]) == 0
    assert sorted(p.name for p in ckpt.iterdir()) == [
        "_generations", "_mssql_cdc_family_cache.json", "_mssql_cdc_generation.json", "notes.txt",
    ]  # fmt: skip
    assert [p.name for p in (ckpt / "_generations").iterdir()] == ["2"]
    assert orders.state() == state
    orders.commit(("update", 7, "paid"))
    orders.run(on_data_loss="resnapshot")
    assert orders.state() == state
    assert len(orders.snapshot_lsns()) == 3
    assert orders.rebuilt() == orders.source() == [(0, "paid"), (1, "paid"), (7, "paid")]


def gc_cli(argv: list[str]) -> int:
    from mssql_cdc.cli import main

    return main(["gc", *argv])


def test_an_emptied_tables_re_snapshot_is_only_its_event_row(
    orders: Orders, monkeypatch: pytest.MonkeyPatch
) -> None:
    orders.orders(3)
    orders.run()

    def no_lookup(self: object) -> None:
        raise AssertionError("the min_lsn lookup ran although nothing was captured")

    with monkeypatch.context() as patched:
        patched.setattr(BackendObserver, "instances", no_lookup)
        orders.run()  # nothing captured since: no range, no check, no event
    assert orders.events("resnapshot") == []
    log_dir = Path(orders.target) / "_delta_log"
    versions_before = len(list(log_dir.glob("*.json")))
    orders.commit(("delete", 0, None), ("delete", 1, None), ("delete", 2, None))
    orders.cleanup_past_everything()
    orders.run()
    state = orders.state()
    assert state is not None
    assert state["generation"] == 1
    [event] = orders.events("resnapshot")
    assert event["rows"] == 0
    assert all(int(event["max_lsn"], 16) > int(r["_start_lsn"], 16) for r in orders.bronze())
    assert [
        r for r in orders.bronze() if r["_operation"] == 0 and r["_start_lsn"] == event["max_lsn"]
    ] == []
    # No snapshot rows and no change rows: the deletes were never read. A 0-row micro-batch
    # may leave an empty bronze commit (the one-pass sink learns its rows only by appending).
    added = [
        line
        for commit in sorted(log_dir.glob("*.json"))[versions_before:]
        for line in commit.read_text().splitlines()
        if '"add"' in line
    ]
    assert added == []
    assert orders.rebuilt() == [] == orders.source()


def test_recovery_before_batch_zero_starts_generation_one_at_once(
    spark: SparkSession, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    orders = Orders(spark, tmp_path, app_id="given-v1")
    orders.orders(3)
    given = orders.emu.idle(at="2026-09-28T14:30:00")
    orders.minute = 40
    orders.commit(("delete", 0, None))
    orders.cleanup_past_everything()
    orders.extra["startingLsn"] = given
    with caplog.at_level(logging.INFO, logger="mssql_cdc.recovery.preflight"):
        query = orders.run(bootstrap=False)
    assert query.name == "given-v1.g1"
    assert len([r for r in orders.bronze() if r["_operation"] == 0]) == 2
    [event] = orders.events("resnapshot")
    assert event["lost_from_ts"] is None
    warning, _, info = (  # the loss, the snapshot's position, the switch
        r.getMessage() for r in caplog.records if r.name == "mssql_cdc.recovery.preflight"
    )
    assert f"changes after {given}" in warning
    assert "generation 1, sink app_id given-v1.g1" in warning
    assert "2 rows in" in info
    assert orders.rebuilt() == orders.source()


def test_a_checkpoint_python_cannot_see_is_refused_without_a_snapshot(orders: Orders) -> None:
    orders.orders(2)
    orders.run()
    orders.commit(("insert", 5, "new"))
    orders.run()
    shutil.rmtree(orders.checkpoint)
    orders.checkpoint.mkdir()
    facts_before = len(orders.facts_rows())
    with pytest.raises(ValueError, match="Python cannot see Spark's commits"):
        orders.to_delta()
    assert orders.spark.streams.active == []
    assert len(orders.facts_rows()) == facts_before
    assert orders.state() is None


def test_a_manual_snapshot_after_the_loss_is_reused_without_a_second_read(
    orders: Orders,
) -> None:
    orders.orders(3)
    orders.run(bootstrap=False)
    orders.commit(("delete", 0, None))
    orders.cleanup_past_everything()
    manual = stream(orders.spark, orders.options()).snapshot(orders.target, resnapshot=True)
    orders.run(bootstrap=False)
    snapshot_rows = [r for r in orders.bronze() if r["_operation"] == 0]
    assert sorted(r["order_id"] for r in snapshot_rows) == [1, 2]
    assert {r["_start_lsn"] for r in snapshot_rows} == {manual["lsn"]}
    state = orders.state()
    assert state is not None
    assert (state["generation"], state["snapshot_lsn"]) == (1, manual["lsn"])
    [event] = orders.events("resnapshot")
    assert event["rows"] is None
    assert event["duration_ms"] is None
    assert orders.rebuilt() == orders.source()


def twin_lsn_of_the_next_commit(orders: Orders, twin_root: Path, at_text: str) -> str:
    """Insert 5's LSN, learnt from a twin file given the same calls (spec 40 section 3.9)."""
    twin = Orders(orders.spark, twin_root, profile=orders.profile)
    twin.orders(3)
    twin.commit(("delete", 0, None))
    twin.cleanup_past_everything()
    lsn = twin.emu.commit([("insert", "dbo.orders", {"order_id": 5, "status": "new"})], at=at_text)
    twin.emu.close()
    return lsn


def test_a_snapshot_purged_during_its_own_read_fails_then_the_guard_then_the_override(
    spark: SparkSession, tmp_path: Path
) -> None:
    # Immediate capture on every profile: the hooks below commit inside a table read and then
    # clean up to that commit, which a capture cycle would have to take in between; reads run
    # no jobs (decision 1240), so only immediate capture can stage this race.
    orders = Orders(spark, tmp_path, profile="immediate")
    orders.orders(3)
    orders.run(bootstrap=False)
    orders.commit(("delete", 0, None))
    orders.cleanup_past_everything()
    insert5_at = "2026-10-05T00:00:00"
    insert5 = twin_lsn_of_the_next_commit(orders, tmp_path / "twin", insert5_at)
    orders.emu.commit_before_read(
        [("insert", "dbo.orders", {"order_id": 5, "status": "new"})], at=insert5_at
    )
    orders.emu.cleanup_during_read("dbo_orders", insert5, read="table")
    with pytest.raises(DataLossError) as failed:
        orders.to_delta(bootstrap=False)
    text = str(failed.value)
    assert "took longer" in text
    assert "snapshot='chunked'" in text
    assert "resnapshot_interval_days=0" in text
    assert orders.emu.pending_hooks() == []
    state = orders.state()
    assert state is not None
    assert state["generation"] == 0
    assert "recovering" in state
    assert "failed_at" in state
    assert orders.events("resnapshot") == []
    fuzzy = orders.snapshot_lsns()

    with pytest.raises(DataLossError, match="a failed re-snapshot"):
        orders.to_delta(bootstrap=False)
    assert orders.snapshot_lsns() == fuzzy

    orders.run(bootstrap=False, resnapshot_interval_days=0)
    state = orders.state()
    assert state is not None
    assert state["generation"] == 1
    assert state["snapshot_lsn"] not in fuzzy
    [event] = orders.events("resnapshot")
    assert event["rows"] == 3
    assert orders.rebuilt() == orders.source() == [(1, "new"), (2, "new"), (5, "new")]


def test_a_disabled_instance_holding_unread_changes_is_re_snapshot_from_its_newer_instance(
    orders: Orders,
) -> None:
    orders.orders(3)
    orders.run()
    newer = orders.switch_instance_over(("update", 1, "paid"), ("delete", 2, None))
    with pytest.raises(StreamingQueryException) as failed:
        orders.run(on_data_loss="fail")
    assert is_data_loss(failed.value)
    assert "held only by capture instance 'dbo_orders', disabled" in str(failed.value)
    assert orders.state() is None

    orders.run()
    state = orders.state()
    assert state is not None
    assert state["generation"] == 1
    [event] = orders.events("resnapshot")
    assert event["max_lsn"] == state["snapshot_lsn"]
    snapshot = [r for r in orders.bronze() if r["_start_lsn"] == event["max_lsn"]]
    assert {r["_capture_instance"] for r in snapshot} == {newer}
    assert orders.rebuilt() == orders.source() == [(0, "new"), (1, "paid"), (100, "after")]
    orders.commit(("update", 0, "paid"))
    orders.run()
    assert orders.rebuilt() == orders.source() == [(0, "paid"), (1, "paid"), (100, "after")]
