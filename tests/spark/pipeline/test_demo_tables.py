"""`mssql-cdc demo --tables 5`: five tables in one job, and only the paused two re-snapshot.

The oracles are the emulator file the demo leaves in --out, the state files, the facts rows and
the plain-Python rebuild rule of tests/spark/support/recovery_support.py; the demo's own verdict
is checked against them, not trusted.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import mssql_cdc.spark
from mssql_cdc.cli import main
from mssql_cdc.core.checkpoint import STATE_FILE_NAME
from mssql_cdc.emulator import Emulator
from tests.spark.support.recovery_support import rebuild

INSTANCES = [f"dbo_orders_0{n}" for n in range(1, 6)]
PAUSED = {"dbo_orders_04", "dbo_orders_05"}


def test_five_tables_stream_in_one_job_and_only_the_two_paused_streams_re_snapshot(
    spark: SparkSession,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The demo starts its own session; in the test run it shares the run's one session.
    monkeypatch.setattr(mssql_cdc.spark, "local_session", lambda *a, **k: spark)
    out = tmp_path / "demo"

    code = main(["demo", "--tables", "5", "--out", str(out), "--json"])

    result = json.loads(capsys.readouterr().out)
    assert code == 0
    assert result["equal"] is True
    assert [t["app_id"] for t in result["tables"]] == INSTANCES

    out = Path(result["out"])
    facts = [r.asDict() for r in spark.read.format("delta").load(str(out / "facts")).collect()]
    emu = Emulator.open(out / "emulator.db")
    for n, instance in enumerate(INSTANCES, start=1):
        state_file = out / "checkpoints" / instance / STATE_FILE_NAME
        generation = json.loads(state_file.read_text())["generation"] if state_file.exists() else 0
        assert generation == (1 if instance in PAUSED else 0), instance
        target = str(out / "bronze" / instance)
        events = sorted(f["event"] for f in facts if f["target"] == target and f["event"])
        assert events.count("resnapshot") == (1 if instance in PAUSED else 0), (instance, events)
        assert events.count("bootstrap") == 1, (instance, events)
        bronze = [r.asDict() for r in spark.read.format("delta").load(target).collect()]
        source = sorted((r["order_id"], r["status"]) for r in emu.rows(f"dbo.orders_0{n}"))
        assert source, instance
        assert rebuild(bronze, facts, target) == source, instance
    emu.close()
