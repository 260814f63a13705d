"""`mssql-cdc plan` against a real checkpoint that to_delta wrote on the emulator.

The CLI runs in process through `main(argv)`, so it plans with the test's Spark session. Its
exit code and its `--json` output are checked against what the files show (the checkpoint's
last committed offset read here in plain Python, the emulator's commit times) and against
what the next `to_delta` then does.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from mssql_cdc.cli import main
from tests.spark.support.recovery_support import Orders


@pytest.fixture
def orders(spark: SparkSession, tmp_path: Path) -> Orders:
    return Orders(spark, tmp_path / "stream", app_id="cli-v1")


def last_committed_line(ckpt: Path) -> dict[str, str]:
    """Line 3 of offsets/<n> for the highest n in commits/, read without the library."""
    highest = max(int(p.name) for p in (ckpt / "commits").iterdir() if p.name.isdigit())
    line: dict[str, str] = json.loads((ckpt / "offsets" / str(highest)).read_text().split("\n")[2])
    return line


def plan(
    orders: Orders, capsys: pytest.CaptureFixture[str], *extra: str, as_json: bool = True
) -> tuple[int, Any, str]:
    options = orders.root / "options.json"
    options.write_text(json.dumps(orders.options()))
    argv = [
        "plan", "--options", str(options), "--target", orders.target, "--app-id", orders.app_id,
        "--checkpoint", str(orders.checkpoint), "--facts", orders.facts, "--bootstrap", *extra,
    ]  # fmt: skip
    code = main([*argv, "--json"] if as_json else argv)
    out, err = capsys.readouterr()
    return code, json.loads(out) if as_json and out else out, err


def test_the_plan_command_exits_0_10_11_and_2_as_documented(
    orders: Orders, capsys: pytest.CaptureFixture[str]
) -> None:
    orders.orders(3)
    orders.run()
    last_insert = orders.commit(("insert", 3, "new"))
    orders.run()
    state_before = orders.state_file.exists()

    code, no_loss, err = plan(orders, capsys)
    assert (code, err) == (0, "")
    assert (no_loss["action"], no_loss["generation"], no_loss["next_generation"]) == ("none", 0, 0)
    assert no_loss["start"] == last_committed_line(orders.checkpoint)
    assert no_loss["start"]["lsn"] == last_insert
    assert orders.state_file.exists() == state_before

    orders.commit(("delete", 2, None))
    orders.cleanup_past_everything()
    facts_before = len(orders.facts_rows())
    code, loss, err = plan(orders, capsys)
    assert (code, err) == (10, "")
    assert (loss["action"], loss["next_generation"], loss["interval_ok"]) == ("resnapshot", 1, True)
    assert loss["start"] == {"lsn": last_insert, "commit_ts": orders.commit_time(last_insert)}
    assert loss["lost_from_ts"] == orders.commit_time(last_insert)
    assert loss["reuse"] is None
    code, text, _ = plan(orders, capsys, as_json=False)
    assert code == 10
    assert text.splitlines()[0].split() == ["action", "resnapshot", "(exit", "10)"]
    assert len(orders.facts_rows()) == facts_before
    assert orders.state() is None

    query = orders.run()  # the plan said a re-snapshot into generation 1: to_delta does so
    assert query.name == "cli-v1.g1"
    assert (orders.state() or {}).get("generation") == 1
    assert orders.rebuilt() == orders.source() == [(0, "new"), (1, "new"), (3, "new")]

    orders.commit(("insert", 7, "new"))
    orders.cleanup_past_everything()
    state_bytes = orders.state_file.read_bytes()
    code, blocked, err = plan(orders, capsys)
    assert (code, err) == (11, "")
    assert (blocked["action"], blocked["interval_ok"]) == ("blocked", False)
    assert "resnapshot_interval_days" in blocked["reason"]
    assert blocked["generation"] == 1
    code, override, _ = plan(orders, capsys, "--interval-days", "0")
    assert (code, override["action"], override["next_generation"]) == (10, "resnapshot", 2)
    assert orders.state_file.read_bytes() == state_bytes

    code, out, err = plan(orders, capsys, "--interval-days", "-1")
    assert (code, out) == (2, "")
    assert "resnapshot_interval_days" in err
    with pytest.raises(SystemExit) as usage:
        plan(orders, capsys, "--snapshot", "sideways")
    assert usage.value.code == 2
    orders.state_file.write_text("{not json")
    code, out, err = plan(orders, capsys)
    assert (code, out) == (2, "")
    assert str(orders.state_file) in err
    assert orders.spark.streams.active == []
