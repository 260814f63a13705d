"""`mssql-cdc status --chart` after a real stream's loss and re-snapshot: the PNG is written and
its lines are the facts rows Spark reads, worked out again here in plain Python."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from mssql_cdc.cli.chart import chart_data
from mssql_cdc.facts import read_history
from tests.spark.support.recovery_support import Orders


@pytest.fixture
def orders(spark: SparkSession, tmp_path: Path) -> Orders:
    return Orders(spark, tmp_path)


def expected_lines(rows: list[dict[str, Any]]) -> list[tuple[int, list[Any]]]:
    """(generation, [(commit time, headroom, lag), ...]) per generation, batches in order."""
    batches = [r for r in rows if r["event"] is None and r["batch_id"] is not None]
    found: dict[int, list[tuple[int, datetime, Any, Any]]] = {}
    for r in batches:
        moment = r["end_commit_ts"] or r["max_commit_ts"]
        if moment is not None:
            found.setdefault(r["generation"], []).append(
                (
                    r["batch_id"],
                    moment,
                    r["retention_headroom_hours"],
                    r["ingestion_lag_seconds"],
                )
            )
    return [(g, [p[1:] for p in sorted(found[g])]) for g in sorted(found)]


def test_status_chart_draws_the_recovered_streams_facts_rows(
    orders: Orders, tmp_path: Path
) -> None:
    orders.orders(3)
    orders.run()  # bootstrap, generation 0
    orders.commit(("insert", 3, "new"))
    orders.run()
    orders.commit(("update", 1, "paid"))
    orders.cleanup_past_everything()
    orders.run()  # the loss: a full re-snapshot opens generation 1
    orders.commit(("insert", 4, "new"), ("delete", 0, None))
    orders.run()

    chart = tmp_path / "headroom.png"
    args = ["status", str(orders.checkpoint), "--app-id", "life-v1", "--facts", orders.facts]
    done = subprocess.run(
        [sys.executable, "-m", "mssql_cdc.cli", *args, "--chart", str(chart), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert json.loads(done.stdout)["chart"] == str(chart)
    head = chart.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", head[16:24]) == (990, 715)  # 9 x 6.5 inches at 110 dpi
    assert chart.stat().st_size > 10_000

    rows = orders.facts_rows()
    data = chart_data([read_history(orders.facts, "life-v1")])
    wanted = expected_lines(rows)
    assert [g for g, _ in wanted] == [0, 1]
    assert [
        (line.generation, list(zip(line.times, line.headroom_hours, line.lag_seconds, strict=True)))
        for line in data.lines
    ] == wanted
    resnapshot = orders.events("resnapshot")
    bootstrap = orders.events("bootstrap")
    assert len(resnapshot) == 1
    assert len(bootstrap) == 1
    assert resnapshot[0]["lost_to_ts"] is not None
    assert sorted((m.event, m.at, m.lost_from, m.lost_to) for m in data.marks) == sorted(
        (r["event"], r["end_commit_ts"] or r["max_commit_ts"], r["lost_from_ts"], r["lost_to_ts"])
        for r in [*bootstrap, *resnapshot]
    )
