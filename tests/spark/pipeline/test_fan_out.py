"""fan_out end to end: twenty tables of one emulator database in one job, one facts table.

One table lost changes the stream had not read and re-snapshots on its own; another lost them
too but runs with on_data_loss="fail", so its stream fails and the job names it, while the
others (on_failure="continue") run to their end. `finalization.track` follows the whole job.
The oracles are the emulator's rows, its commit times and the plain-Python rebuild rule of
tests/spark/support/recovery_support.py; the test never asks the library what it expects.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from mssql_cdc import StreamEntry, fan_out, is_data_loss
from mssql_cdc.errors import StreamFailedError
from mssql_cdc.finalization import track
from tests.spark.support.recovery_support import rebuild
from tests.spark.support.shop import shop

TABLES = [f"t{i:02d}" for i in range(20)]
LOSSY, FAILING = "t03", "t07"
BOOTSTRAPPED = {"t00", "t01", "t02", "t04"}


def rows_of(spark: SparkSession, path: Path) -> list[dict[str, Any]]:
    return [r.asDict() for r in spark.read.format("delta").load(str(path)).collect()]


def test_twenty_tables_stream_in_one_job_and_only_the_lossy_one_re_snapshots(
    spark: SparkSession, tmp_path: Path
) -> None:
    db = shop(tmp_path / "shop.db", TABLES, deleted=TABLES[::2], order_id=1)
    emu, given, mark = db.emu, db.given, db.mark
    for name in (LOSSY, FAILING):  # their changes after `given` are purged, unread
        emu.cleanup(f"dbo_{name}", mark)

    root, facts, control = (
        tmp_path / "lake",
        str(tmp_path / "lake" / "facts"),
        str(tmp_path / "ctl"),
    )
    loss = {"bootstrap": False, "options": {"startingLsn": given}}
    streams: list[Any] = []
    for name in TABLES:
        if name == LOSSY:
            streams.append(StreamEntry(capture_instance=f"dbo_{name}", **loss))  # type: ignore[arg-type]
        elif name == FAILING:
            streams.append({"capture_instance": f"dbo_{name}", "on_data_loss": "fail", **loss})
        else:
            streams.append({"capture_instance": f"dbo_{name}", "bootstrap": name in BOOTSTRAPPED})
    job = fan_out(
        spark,
        streams,
        options={"backend": "emulator", "emulatorPath": str(emu.path)},
        facts_table=facts,
        root=str(root),
        trigger={"availableNow": True},
        on_data_loss="resnapshot",
        max_snapshots=2,
        max_starting=2,  # each query starts two Python processes; two cores here
        on_failure="continue",
    )
    tracker = track(spark, job.targets.values(), facts, control_table=control)
    try:
        with pytest.raises(StreamFailedError) as failed:
            job.await_termination(600)
    finally:
        job.stop()  # returns at once after the job ended; a test that failed stops it here
        verdicts = tracker.stop()

    assert (failed.value.app_id, failed.value.capture_instance) == ("dbo_t07", "dbo_t07")
    assert "streams[7] (dbo_t07)" in str(failed.value)
    assert is_data_loss(failed.value)
    assert len(job.failures) == 1
    assert job.states() == {f"dbo_{n}": "failed" if n == FAILING else "finished" for n in TABLES}

    facts_rows = rows_of(spark, Path(facts))
    for name in TABLES:
        target = str(root / "bronze" / f"dbo_{name}")
        if name == FAILING:
            assert not (Path(target) / "_delta_log").exists()
            continue
        source = sorted((int(r["order_id"]), str(r["status"])) for r in emu.rows(f"dbo.{name}"))  # type: ignore[call-overload]
        assert rebuild(rows_of(spark, Path(target)), facts_rows, target) == source, name
        checkpoint = root / "checkpoints" / f"dbo_{name}"
        live = checkpoint / "_generations" / "1" if name == LOSSY else checkpoint
        assert (live / "commits").is_dir(), name  # its own checkpoint, in its own generation

    by_event: dict[str | None, set[str]] = {}
    for row in facts_rows:
        by_event.setdefault(row["event"], set()).add(row["app_id"])
        stream = row["app_id"].split(".g")[0]
        assert row["target"] == str(root / "bronze" / stream), row
    assert by_event["resnapshot"] == {"dbo_t03.g1"}
    assert by_event["bootstrap"] == {f"dbo_{n}" for n in BOOTSTRAPPED}
    batches = {f"dbo_{n}" for n in TABLES if n not in (LOSSY, FAILING)} | {"dbo_t03.g1"}
    assert by_event[None] == batches  # micro-batch rows, under each generation's sink id

    # Every stream that read changes read up to the newest entry, 15:30: its hours are
    # complete up to 15:00. A snapshotted stream's only batch (after its snapshot, at that
    # entry) had nothing to read, so its verdict comes from its snapshot's completion row, at
    # the same entry. The failing stream committed nothing and has none.
    last_entry = emu.lsn_time(mark)
    assert last_entry is not None
    hour = datetime(last_entry.year, last_entry.month, last_entry.day, last_entry.hour)
    assert verdicts == {str(root / "bronze" / f"dbo_{n}"): hour for n in TABLES if n != FAILING}
