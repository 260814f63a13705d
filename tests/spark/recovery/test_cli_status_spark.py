"""`mssql-cdc status --facts` after a real stream's loss and recovery, against the facts rows
Spark reads; and docs/operations.md's alert query, run as written on the same facts table."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from tests.spark.support.recovery_support import Orders


@pytest.fixture
def orders(spark: SparkSession, tmp_path: Path) -> Orders:
    return Orders(spark, tmp_path)


GUIDE = Path(__file__).resolve().parents[3] / "docs" / "operations.md"


def alert_query(facts: str) -> str:
    """The guide's alert query, reading the facts table at `facts` instead of its example name."""
    found = re.search(r"```sql\n-- alert-query\n(.*?)```", GUIDE.read_text(), re.DOTALL)
    assert found is not None, "docs/operations.md lost its alert query"
    return found.group(1).replace("ops.ingestion_facts", f"delta.`{facts}`")


def level(headroom: float | None) -> str:
    """The guide's thresholds, written again: 6 h critical, 24 h warning."""
    if headroom is None:
        return "unknown"
    return "critical" if headroom < 6 else "warning" if headroom < 24 else "ok"


def text(value: datetime | None) -> str | None:
    if value is None:
        return None
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}"


def test_status_json_shows_the_facts_rows_of_the_recovered_stream(orders: Orders) -> None:
    orders.orders(3)
    orders.run()  # bootstrap, generation 0
    orders.commit(("insert", 3, "new"))
    orders.run()
    orders.commit(("update", 1, "paid"))
    orders.cleanup_past_everything()
    orders.run()  # the loss: a full re-snapshot opens generation 1
    orders.commit(("insert", 4, "new"), ("delete", 0, None))
    orders.run()

    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mssql_cdc.cli",
            "status",
            str(orders.checkpoint),
            "--app-id",
            "life-v1",
            "--facts",
            orders.facts,
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    s: dict[str, Any] = json.loads(done.stdout)

    rows = orders.facts_rows()
    batches = [r for r in rows if r["event"] is None]
    newest = max(batches, key=lambda r: (r["generation"], r["batch_id"]))
    assert (newest["app_id"], newest["generation"]) == ("life-v1.g1", 1)
    assert s["generation"] == 1
    assert s["facts"]["latest_batch"] == {
        "app_id": "life-v1.g1",
        "generation": 1,
        "batch_id": newest["batch_id"],
        "rows": newest["rows"],
        "min_lsn": newest["min_lsn"],
        "max_lsn": newest["max_lsn"],
        "end_lsn": newest["end_lsn"],
        "end_commit_ts": text(newest["end_commit_ts"]),
        "source_max_commit_ts": text(newest["source_max_commit_ts"]),
        "ingestion_lag_seconds": newest["ingestion_lag_seconds"],
        "retention_watermark_ts": text(newest["retention_watermark_ts"]),
        "retention_headroom_hours": newest["retention_headroom_hours"],
        "written_at": text(newest["written_at"]),
    }
    assert newest["rows"] == 2
    events = s["facts"]["events"]
    for name, app_id in (
        ("bootstrap", "life-v1"),
        ("resnapshot", "life-v1.g1"),
        ("snapshot_open", "life-v1.g1"),
    ):
        row = max(orders.events(name), key=lambda r: r["written_at"])  # the newest
        assert events[name] == {
            "event": name,
            "app_id": app_id,
            "generation": row["generation"],
            "batch_id": None,
            "lsn": row["min_lsn"],
            "rows": row["rows"],
            "lost_from_ts": text(row["lost_from_ts"]),
            "lost_to_ts": text(row["lost_to_ts"]),
            "detail": None if row["detail"] is None else json.loads(row["detail"]),
            "written_at": text(row["written_at"]),
        }
    assert events["resnapshot"]["lost_to_ts"] is not None
    assert events["data_skipped"] is None

    # The guide's alert query names the newest batch of the stream's family, across generations,
    # as status does, and takes the hours since it was written from its headroom.
    before = datetime.now(UTC).replace(tzinfo=None)
    alerts = [r.asDict() for r in orders.spark.sql(alert_query(orders.facts)).collect()]
    after = datetime.now(UTC).replace(tzinfo=None)
    assert [
        (a["stream"], a["app_id"], a["generation"], a["batch_id"], a["retention_headroom_hours"])
        for a in alerts
    ] == [("life-v1", "life-v1.g1", 1, newest["batch_id"], newest["retention_headroom_hours"])]
    alert = alerts[0]
    assert newest["retention_headroom_hours"] is not None
    written = newest["written_at"]
    oldest = newest["retention_headroom_hours"] - (after - written).total_seconds() / 3600
    youngest = newest["retention_headroom_hours"] - (before - written).total_seconds() / 3600
    assert oldest - 0.001 <= alert["effective_headroom_hours"] <= youngest + 0.001
    assert alert["level"] == level(alert["effective_headroom_hours"])
