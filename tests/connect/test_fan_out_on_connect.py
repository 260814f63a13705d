"""fan_out and finalization.track on a Spark Connect session (docs/spark-connect.md).

Four tables of one emulator database in one job: two bootstrap, one reads its changes from a
given LSN, one lost changes it had not read and re-snapshots on its own. `track` listens through
Connect's client-side listener and advances every table's verdict. The oracles are the
emulator's rows and commit times, rebuilt in plain Python by tests/spark/support.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from mssql_cdc import fan_out
from mssql_cdc.finalization import finalized_until, track
from tests.spark.support.recovery_support import rebuild
from tests.spark.support.shop import shop

TABLES = ("c0", "c1", "c2", "c3")
BOOTSTRAPPED, FROM_GIVEN, LOSSY = {"c0", "c1"}, "c2", "c3"


def rows_of(spark: SparkSession, path: Path) -> list[dict[str, Any]]:
    return [r.asDict() for r in spark.read.format("delta").load(str(path)).collect()]


def test_a_fan_out_job_and_its_tracker_run_on_connect_and_only_the_lossy_table_re_snapshots(
    spark: SparkSession, tmp_path: Path
) -> None:
    db = shop(tmp_path / "shop.db", TABLES, deleted=TABLES[1::2], order_id=2)
    emu, given, mark = db.emu, db.given, db.mark
    emu.cleanup(f"dbo_{LOSSY}", mark)  # its changes after `given` are purged, unread

    root, facts, control = tmp_path / "lake", str(tmp_path / "lake" / "facts"), str(tmp_path / "c")
    streams: list[dict[str, Any]] = [
        {"capture_instance": f"dbo_{n}", "bootstrap": True} for n in sorted(BOOTSTRAPPED)
    ]
    streams += [
        {"capture_instance": f"dbo_{n}", "bootstrap": False, "options": {"startingLsn": given}}
        for n in (FROM_GIVEN, LOSSY)
    ]
    job = fan_out(
        spark,
        streams,
        options={"backend": "emulator", "emulatorPath": str(emu.path)},
        facts_table=facts,
        root=str(root),
        trigger={"availableNow": True},
        on_data_loss="resnapshot",
        max_starting=1,
    )
    tracker = track(spark, job.targets.values(), facts, control_table=control)
    try:
        job.await_termination(600)
    finally:
        job.stop()
        verdicts = tracker.stop()

    assert job.states() == {f"dbo_{n}": "finished" for n in TABLES}
    facts_rows = rows_of(spark, Path(facts))
    for name in TABLES:
        target = str(root / "bronze" / f"dbo_{name}")
        source = sorted((int(r["order_id"]), str(r["status"])) for r in emu.rows(f"dbo.{name}"))  # type: ignore[call-overload]
        assert rebuild(rows_of(spark, Path(target)), facts_rows, target) == source, name
    events = {(r["event"], r["app_id"]) for r in facts_rows if r["event"] is not None}
    assert {a for e, a in events if e == "resnapshot"} == {f"dbo_{LOSSY}.g1"}
    assert {a for e, a in events if e == "bootstrap"} == {f"dbo_{n}" for n in BOOTSTRAPPED}

    # Every stream ends at the newest entry (a batch, or the snapshot taken there): each
    # table's hours are complete up to that entry's hour, in the tracker and the control table.
    last_entry = emu.lsn_time(mark)
    assert last_entry is not None
    hour = datetime(last_entry.year, last_entry.month, last_entry.day, last_entry.hour)
    assert verdicts == {str(root / "bronze" / f"dbo_{n}"): hour for n in TABLES}
    for name in TABLES:
        assert finalized_until(spark, control, str(root / "bronze" / f"dbo_{name}")) == hour
