"""Two stories streamed through each backend: the emulator in process, and the same emulator
served over TDS to mssql-python and to pymssql (issue 15, "End to end").

The first: a bootstrap snapshot, changes over restarts (exactly once), a restart with nothing
new, changes the cleanup job purges before the stream reads them (the guard and a resnapshot
recovery), and changes after the recovery. The second: a chunked bootstrap finished by
backfill(), a capture-instance switch over unread changes, a cleanup in the middle of the
stream's change read (the executor's guard, then a re-snapshot), a skip with its data_skipped
row, and silver. Each backend's bronze, facts, state file (and silver) must equal the in-process
run's; the in-process run itself is checked against the source table by the rebuild oracle,
so the comparison is not only of the library with itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import SparkSession

from mssql_cdc import is_data_loss
from mssql_cdc.silver import apply_changes
from tests.spark.support.backends import BACKENDS, Backend
from tests.spark.support.chunked_support import backfill
from tests.spark.support.recovery_support import Orders

# Columns that hold wall-clock time, this run's paths or byte counts that differ by driver.
_FACTS_VARYING = {
    "started_at",
    "duration_ms",
    "read_seconds",
    "read_mb",
    "ingestion_lag_seconds",
    "capture_lag_seconds",
    "written_at",
    "target",
    "detail",
}


def _story(spark: SparkSession, root: Path, backend: Backend) -> dict[str, Any]:
    o = Orders(spark, root, backend=backend)
    o.orders(3)
    o.run()  # bootstrap: the snapshot, then the stream
    o.commit(("update", 1, "paid"), ("delete", 2, None))
    o.commit(("insert", 7, "new"))
    o.run()
    o.run()  # nothing new: exactly once over a restart
    o.commit(("update", 7, "shipped"))
    o.cleanup_past_everything()  # the update is purged before the stream reads it
    o.commit(("insert", 8, "late"))
    o.run()  # the guard finds the loss, the recovery re-snapshots
    o.commit(("delete", 1, None))
    o.run()
    assert o.rebuilt() == o.source(), f"{backend}: the rebuild differs from the source"
    state = o.state()
    assert state is not None
    return {
        "bronze": _sorted_rows(o.bronze()),
        "facts": _comparable_facts(o),
        "state": state,
        "events": o.events("resnapshot"),
    }


def _sorted_rows(rows: list[dict[str, Any]]) -> list[tuple[tuple[str, Any], ...]]:
    return sorted((tuple(sorted(r.items())) for r in rows), key=repr)


def _comparable_facts(o: Orders) -> list[tuple[tuple[str, Any], ...]]:
    return sorted(
        (
            tuple(sorted((k, v) for k, v in r.items() if k not in _FACTS_VARYING))
            for r in o.facts_rows()
        ),
        key=repr,
    )


def _assert_same(seen: dict[str, Any], oracle: dict[str, Any], backend: Backend) -> None:
    """Bronze, facts (but their wall-clock columns) and state (but its time) are the oracle's."""
    assert seen["bronze"] == oracle["bronze"]
    differing = {
        k
        for ours, theirs in zip(seen["facts"], oracle["facts"], strict=True)
        for (k, v), (_, w) in zip(ours, theirs, strict=True)
        if v != w
    }
    assert not differing, f"facts columns differ over {backend}: {sorted(differing)}"
    assert _without_time(seen["state"]) == _without_time(oracle["state"])


_in_process: dict[str, Any] = {}


def _without_time(state: dict[str, Any]) -> dict[str, Any]:
    """The state file's fields but the wall-clock time it was written at."""
    return {k: v for k, v in state.items() if k != "at"}


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_backend_streams_the_same_bronze_facts_and_state(
    spark: SparkSession, tmp_path: Path, backend: Backend
) -> None:
    if not _in_process:
        _in_process.update(_story(spark, tmp_path / "in-process", "emulator"))
        assert len(_in_process["events"]) == 1, "the story must recover once"
    if backend == "emulator":
        return
    _assert_same(_story(spark, tmp_path / backend, backend), _in_process, backend)


def _second_story(spark: SparkSession, root: Path, backend: Backend) -> dict[str, Any]:
    """A chunked bootstrap finished by backfill(), a capture-instance switch whose disabled
    instance held unread changes (re-snapshot from the newer one), a cleanup while a task reads
    the changes (the executor's guard fails the batch, the next run re-snapshots), a skip past
    purged changes with its `data_skipped` row, and silver built from the result."""
    o = Orders(spark, root, app_id="wide-v1", backend=backend, extra={"numPartitions": "2"})
    o.orders(6)
    o.run(snapshot="chunked", on_data_loss="fail")  # opens the chunked bootstrap
    waves = 0
    while not backfill(o, chunk_rows=2)["done"]:
        waves += 1
        assert waves < 10, f"{backend}: backfill() does not finish"
    o.run(snapshot="chunked", on_data_loss="fail")
    o.commit(("update", 0, "paid"))
    newer = o.switch_instance_over(("update", 1, "lost"), ("delete", 2, None))
    o.run()  # the disabled instance held unread changes: re-snapshot from the newer one
    assert o.rebuilt() == o.source(), f"{backend}: the rebuild differs after the switch"
    o.extra["captureInstance"] = newer
    o.commit(("update", 4, "moving"))
    o.commit(("insert", 10, "mid"))
    mark = o.emu.idle(at=o._tick())  # above every change of the batch, whichever task claims
    o.emu.cleanup_mid_read(newer, mark, after_rows=1)  # fires in the task's read, over the wire too
    with pytest.raises(StreamingQueryException) as mid_read:
        o.run()
    assert is_data_loss(mid_read.value), f"{backend}: {mid_read.value}"
    assert "may be missing" in str(mid_read.value), f"{backend}: not the executor's guard"
    assert o.emu.pending_hooks() == [], f"{backend}: the mid-read hook did not fire"
    # the pre-flight finds the range purged; a second re-snapshot within the interval is asked for
    o.run(resnapshot_interval_days=0)
    assert len(o.events("resnapshot")) == 2, f"{backend}: no re-snapshot after the task's loss"
    assert o.rebuilt() == o.source(), f"{backend}: the rebuild differs after the mid-read loss"
    o.commit(("update", 3, "gone"))
    o.cleanup_past_everything()
    o.commit(("insert", 9, "late"))
    o.extra["failOnDataLoss"] = "false"
    o.run(on_data_loss="fail")  # skips past the purged update, records data_skipped
    silver, control = str(root / "silver"), str(root / "control")
    apply_changes(
        spark, o.target, silver, keys=["order_id"], control_table=control, facts_table=o.facts
    )
    silver_rows = sorted(
        (int(r["order_id"]), str(r["status"]))
        for r in spark.read.format("delta").load(silver).collect()
    )
    assert silver_rows == o.rebuilt(), f"{backend}: silver differs from the rebuild oracle"
    facts = _comparable_facts(o)
    return {
        "bronze": _sorted_rows(o.bronze()),
        "facts": facts,
        "silver": silver_rows,
        "state": o.state(),
        "events": sorted({dict(f).get("event") for f in facts}, key=str),
    }


_in_process_second: dict[str, Any] = {}


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_chunked_backfill_an_instance_switch_a_skip_and_silver_agree_on_every_backend(
    spark: SparkSession, tmp_path: Path, backend: Backend
) -> None:
    if not _in_process_second:
        _in_process_second.update(_second_story(spark, tmp_path / "in-process", "emulator"))
        assert _in_process_second["events"] == [
            None, "bootstrap", "data_skipped", "resnapshot", "snapshot_chunk", "snapshot_open",
            "snapshot_plan",
        ], _in_process_second["events"]  # fmt: skip
    if backend == "emulator":
        return
    seen = _second_story(spark, tmp_path / backend, backend)
    _assert_same(seen, _in_process_second, backend)
    assert seen["silver"] == _in_process_second["silver"]
