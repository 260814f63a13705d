"""`mssql-cdc status --job JOB --chart FILE.png` after a real `fan_out` job of three tables, one
of which lost changes and re-snapshot: one chart, a line per table and generation, each line the
micro-batch rows of that table in the job's facts table, worked out again here in plain Python
from the rows Spark reads (docs/operations.md, 'Pictures of a stream')."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from mssql_cdc import fan_out
from mssql_cdc.cli.chart import chart_data
from mssql_cdc.facts import read_history
from tests.spark.support.recovery_support import at
from tests.spark.support.shop import shop
from tests.support import emulator_profile

TABLES = ["t00", "t01", "t02"]
LOSSY = "t01"


def lines_by_hand(rows: list[dict[str, Any]], app_id: str) -> list[tuple[str, int, list[Any]]]:
    """(stream, generation, [(commit time, headroom), ...]) of one stream's family: its
    micro-batch rows (generation 0 under `app_id`, n under `app_id.g<n>`), by batch id."""
    found: dict[int, list[tuple[int, datetime, Any]]] = {}
    for r in rows:
        family = r["app_id"] == (app_id if r["generation"] == 0 else f"{app_id}.g{r['generation']}")
        if not family or r["event"] is not None or r["batch_id"] is None:
            continue
        moment = r["end_commit_ts"] or r["max_commit_ts"]
        if moment is not None:
            found.setdefault(r["generation"], []).append(
                (r["batch_id"], moment, r["retention_headroom_hours"])
            )
    return [(app_id, g, [p[1:] for p in sorted(found[g])]) for g in sorted(found)]


def test_a_fan_out_jobs_chart_draws_a_line_per_table_from_the_jobs_facts_table(
    spark: SparkSession, tmp_path: Path
) -> None:
    db = shop(tmp_path / "shop.db", TABLES, deleted=TABLES, order_id=1)
    db.emu.cleanup(f"dbo_{LOSSY}", db.mark)  # its changes after `given` are purged, unread
    facts = str(tmp_path / "lake" / "facts")
    streams: list[Any] = [
        {"capture_instance": f"dbo_{n}", "bootstrap": n != LOSSY}
        | ({"options": {"startingLsn": db.given}} if n == LOSSY else {})
        for n in TABLES
    ]

    def run_job() -> None:
        job = fan_out(
            spark,
            streams,
            options={"backend": "emulator", "emulatorPath": str(db.emu.path)},
            facts_table=facts,
            root=str(tmp_path / "lake"),
            trigger={"availableNow": True},
            on_data_loss="resnapshot",
            max_starting=2,
        )
        try:
            job.await_termination(600)
        finally:
            job.stop()

    run_job()  # the bootstraps, and the lossy table's re-snapshot: each stream is caught up
    db.emu.commit(
        [("insert", f"dbo.{n}", {"order_id": 3, "status": "new"}) for n in TABLES], at=at(110)
    )
    emulator_profile.wait_for_capture(db.emu, at(110))
    run_job()  # a batch with rows in every stream: a point on each line

    job_file = tmp_path / "job.json"
    job_file.write_text(
        json.dumps(
            {"facts_table": facts, "streams": [{"capture_instance": f"dbo_{n}"} for n in TABLES]}
        )
    )
    chart = tmp_path / "job.png"
    args = ["status", "--job", str(job_file), "--chart", str(chart), "--json"]
    done = subprocess.run(
        [sys.executable, "-m", "mssql_cdc.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert json.loads(done.stdout)["streams"] == [f"dbo_{n}" for n in TABLES]
    head = chart.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", head[16:24])[0] == 990  # 9 inches wide at 110 dpi

    rows = [r.asDict() for r in spark.read.format("delta").load(facts).collect()]
    wanted = [line for n in TABLES for line in lines_by_hand(rows, f"dbo_{n}")]
    # a line per table: the lossy one's in the generation its re-snapshot opened (its
    # generation 0 never ran a batch: the loss was found before its query started)
    assert [(s, g) for s, g, _ in wanted] == [("dbo_t00", 0), ("dbo_t01", 1), ("dbo_t02", 0)]
    data = chart_data([read_history(facts, f"dbo_{n}") for n in TABLES])
    drawn = [
        (line.stream, line.generation, list(zip(line.times, line.headroom_hours, strict=True)))
        for line in data.lines
    ]
    assert drawn == wanted
    resnapshots = [r for r in rows if r["event"] == "resnapshot"]
    assert [r["app_id"] for r in resnapshots] == [f"dbo_{LOSSY}.g1"]
    assert ("dbo_t01", "resnapshot") in {(m.stream, m.event) for m in data.marks}
