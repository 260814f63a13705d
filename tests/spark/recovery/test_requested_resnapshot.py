"""A re-snapshot a person asks for (issue 20): `CdcStream.resnapshot()` and `mssql-cdc
resnapshot` open the next generation without a loss, through the recovery's crash-safe steps.

The oracle is the emulator's own table: bronze's latest image, rebuilt in plain Python, equals
it after every step; the facts rows and the state file are read as a user reads them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from mssql_cdc import ConfigError, stream
from mssql_cdc.cli import main
from mssql_cdc.testing import InjectedFault, failpoints
from tests.spark.support.recovery_support import Orders


@pytest.fixture
def orders(spark: SparkSession, tmp_path: Path) -> Orders:
    return Orders(spark, tmp_path, app_id="asked-v1")


def test_a_requested_re_snapshot_opens_the_next_generation_once_and_the_stream_runs_on(
    orders: Orders, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    orders.orders(3)
    orders.run()
    orders.commit(("update", 1, "paid"))
    orders.run()
    assert orders.state() is None
    cdc = stream(orders.spark, orders.options())
    args = (orders.target, orders.app_id, str(orders.checkpoint), orders.facts)

    # A crash after the state records the start: the rerun finishes the same attempt.
    with failpoints({"recovery.after_event": "raise"}), pytest.raises(InjectedFault):
        cdc.resnapshot(*args)
    assert orders.state() is not None
    assert orders.state()["recovering"] is not None  # type: ignore[index]
    result = cdc.resnapshot(*args)
    state = orders.state()
    assert state is not None
    assert set(state) == {"generation", "snapshot_lsn", "commit_ts", "at"}
    assert result["generation"] == state["generation"] == 1
    assert result["sink_app_id"] == "asked-v1.g1"
    assert result["snapshot"]["lsn"] == state["snapshot_lsn"]
    assert result["checkpoint"] == str(orders.checkpoint / "_generations" / "1")
    [event] = orders.events("resnapshot")  # one, though the first attempt wrote it too
    assert (event["app_id"], event["rows"]) == ("asked-v1.g1", 3)
    assert (event["lost_from_ts"], event["lost_to_ts"]) == (None, None)
    assert json.loads(event["detail"]) == {"requested": True}
    in_order = sorted(orders.events("snapshot_open"), key=lambda o: o["written_at"])
    opens = [json.loads(o["detail"]) for o in in_order]
    assert [o.get("requested") for o in opens] == [None, True]  # the bootstrap, then this one
    assert len(orders.snapshot_lsns()) == 2
    assert orders.rebuilt() == orders.source() == [(0, "new"), (1, "paid"), (2, "new")]

    orders.commit(("delete", 0, None))
    query = orders.run()
    assert query.name == "asked-v1.g1"
    assert orders.rebuilt() == orders.source() == [(1, "paid"), (2, "new")]

    # Within the interval: refused before anything is written; the CLI says the same.
    facts_before, state_before = len(orders.facts_rows()), orders.state_file.read_bytes()
    with pytest.raises(ConfigError, match="requested within resnapshot_interval_days=7"):
        cdc.resnapshot(*args)
    options = tmp_path / "options.json"
    options.write_text(json.dumps(orders.options()))
    cli = ["resnapshot", "--options", str(options), "--target", orders.target, "--app-id"]
    cli += [orders.app_id, "--checkpoint", str(orders.checkpoint), "--facts", orders.facts]
    assert main([*cli, "--quiet"]) == 2
    assert "resnapshot_interval_days=0" in capsys.readouterr().err
    assert len(orders.facts_rows()) == facts_before
    assert orders.state_file.read_bytes() == state_before

    # Asked to bypass the guard, as a chunked snapshot: generation 2 opens at once.
    assert main([*cli, "--snapshot", "chunked", "--interval-days", "0", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["generation"] == 2
    state = orders.state()
    assert state is not None
    assert state["generation"] == 2
    newest_open = max(orders.events("snapshot_open"), key=lambda o: o["written_at"])
    detail = json.loads(newest_open["detail"])
    assert (detail["mode"], detail["generation"], detail["requested"]) == ("chunked", 2, True)
    status = cdc.backfill(orders.target, app_id=orders.app_id, facts_table=orders.facts)
    assert status["state"] == "done"
    orders.commit(("insert", 9, "new"))
    assert orders.run().name == "asked-v1.g2"
    assert orders.rebuilt() == orders.source() == [(1, "paid"), (2, "new"), (9, "new")]


def test_a_stream_that_never_started_has_nothing_to_re_snapshot(orders: Orders) -> None:
    orders.orders(2)
    cdc = stream(orders.spark, orders.options())
    with pytest.raises(ConfigError, match="nothing to re-snapshot"):
        cdc.resnapshot(orders.target, orders.app_id, str(orders.checkpoint), orders.facts)
    assert orders.state() is None
    assert orders.facts_rows() == []
