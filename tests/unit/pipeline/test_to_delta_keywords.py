"""to_delta's trigger and resnapshot_interval_days: what Spark and the guard take, else refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mssql_cdc.errors import ConfigError
from mssql_cdc.options.config import SourceConfig
from mssql_cdc.pipeline.arguments import ToDeltaArgs, check_to_delta


def check(tmp_path: Path, **kw: Any) -> ToDeltaArgs:
    db = tmp_path / "e.db"
    db.write_bytes(b"")
    options = {"backend": "emulator", "emulatorPath": str(db), "captureInstance": "dbo_orders"}
    args: dict[str, Any] = {
        "target": "bronze.orders",
        "app_id": "orders-v1",
        "checkpoint": str(tmp_path / "ckpt"),
        "facts_table": "ops.facts",
        "bootstrap": False,
        "on_data_loss": "resnapshot",
        "interval_days": 7.0,
        "mode": "full",
        **kw,
    }
    return check_to_delta(SourceConfig.from_options(options), options, **args)


# The keywords of pyspark's DataStreamWriter.trigger, with values it accepts.
GOOD = [
    None,
    {"processingTime": "10 seconds"},
    {"processingTime": "1 minute"},
    {"once": True},
    {"availableNow": True},
]


@pytest.mark.parametrize("trigger", GOOD, ids=str)
def test_a_trigger_spark_takes_is_passed_on_unchanged(tmp_path: Path, trigger: Any) -> None:
    assert check(tmp_path, trigger=trigger).trigger == trigger


BAD = [
    ({"bogus": 1}, "'bogus' is not a keyword of DataStreamWriter.trigger"),
    ({"processingtime": "1 second"}, "'processingtime' is not a keyword"),
    ({}, "gives 0 keys where Spark takes exactly one"),
    ({"once": True, "availableNow": True}, "gives 2 keys where Spark takes exactly one"),
    ({"processingTime": ""}, "processingTime takes a non-empty interval string"),
    ({"processingTime": "  "}, "processingTime takes a non-empty interval string"),
    ({"processingTime": 10}, "processingTime takes a non-empty interval string"),
    ({"once": False}, "once takes True only"),
    ({"availableNow": 1}, "availableNow takes True only"),
    ({"availableNow": "true"}, "availableNow takes True only"),
    ({"continuous": "1 second"}, "continuous processing runs no foreachBatch sink"),
    ("availableNow", "trigger='availableNow': pass one of"),
    ([("once", True)], "trigger=[('once', True)]: pass one of"),
]


@pytest.mark.parametrize(("trigger", "message"), BAD, ids=[b[1] for b in BAD])
def test_a_trigger_spark_would_refuse_or_foreach_batch_cannot_run_is_refused_first(
    tmp_path: Path, trigger: Any, message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        check(tmp_path, trigger=trigger)
    assert message in str(caught.value)
    assert not (tmp_path / "ckpt").exists()


def test_the_interval_takes_zero_to_a_century_of_days(tmp_path: Path) -> None:
    assert check(tmp_path, interval_days=0).interval_days == 0.0
    assert check(tmp_path, interval_days=36_500).interval_days == 36_500.0
    for value in (36_500.5, 10**300, 1e308):
        with pytest.raises(ConfigError) as caught:
            check(tmp_path, interval_days=value)
        assert f"resnapshot_interval_days={value!r}: pass a number of days from 0 to 36,500" in (
            str(caught.value)
        )
