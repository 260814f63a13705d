"""to_delta's validation (spec 30 section 5.1): every defect a ConfigError before any I/O."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from mssql_cdc.errors import ConfigError
from mssql_cdc.options.config import SourceConfig
from mssql_cdc.options.reader import given_option
from mssql_cdc.pipeline.arguments import check_to_delta


@pytest.fixture
def options(tmp_path: Path) -> dict[str, object]:
    db = tmp_path / "e.db"
    db.write_bytes(b"")  # the config only checks that the file exists
    return {"backend": "emulator", "emulatorPath": str(db), "captureInstance": "dbo_orders"}


def check(options: Mapping[str, object], tmp_path: Path, **kw: Any) -> Any:
    args: dict[str, Any] = {
        "target": "bronze.orders",
        "app_id": "orders-v1",
        "checkpoint": str(tmp_path / "ckpt"),
        "facts_table": "ops.facts",
        "bootstrap": False,
        "on_data_loss": "resnapshot",
        "interval_days": 7.0,
        "mode": "full",
    }
    args.update(kw)
    return check_to_delta(SourceConfig.from_options(options), options, **args)


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"on_data_loss": "skip"}, "on_data_loss='skip'"),
        ({"mode": "fast"}, "snapshot='fast'"),
        ({"interval_days": -1}, "resnapshot_interval_days=-1"),
        ({"interval_days": math.inf}, "resnapshot_interval_days=inf"),
        ({"interval_days": math.nan}, "resnapshot_interval_days=nan"),
        ({"interval_days": True}, "resnapshot_interval_days=True"),
        ({"interval_days": "7"}, "resnapshot_interval_days='7'"),
        ({"mode": "chunked", "facts_table": None, "on_data_loss": "fail"}, "needs a facts_table"),
        ({"facts_table": None}, "on_data_loss='resnapshot' needs a facts_table"),
        ({"checkpoint": "dbfs:/ckpt/orders"}, "must be a local path or a Volume"),
        ({"checkpoint": "abfss://c@a.dfs.core.windows.net/x"}, "must be a local path or a Volume"),
        ({"checkpoint": "file:/tmp/x"}, "must be a local path or a Volume"),
        ({"checkpoint": "/dbfs/ckpt/orders"}, "must be a local path or a Volume"),
        ({"checkpoint": "/dbfs"}, "must be a local path or a Volume"),
        ({"app_id": "a#b"}, "contains '#'"),
        ({"target": ""}, "target=''"),
        ({"facts_table": "bronze.orders"}, "the same table"),
        ({"facts_table": "Bronze.`orders`"}, "the same table"),
        ({"target": "lake/bronze", "facts_table": "./lake/bronze/"}, "the same table"),
        ({"target": "default.t1 SET TBLPROPERTIES ('x' = 'y')"}, "is not a valid table name"),
        ({"facts_table": "ops.facts; DROP TABLE x"}, "facts_table='ops.facts; DROP TABLE x'"),
        ({"trigger": "availableNow"}, "trigger='availableNow'"),
        ({"gap_deletes": "yes"}, "gap_deletes='yes': pass True or False"),
        ({"gap_deletes": True, "on_data_loss": "fail"}, "only on_data_loss='resnapshot'"),
    ],
)
def test_every_invalid_argument_is_a_config_error_naming_it(
    options: dict[str, object], tmp_path: Path, kw: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError) as info:
        check(options, tmp_path, **kw)
    assert message in str(info.value)
    assert isinstance(info.value, ValueError)
    assert not (tmp_path / "ckpt").exists()


@pytest.mark.parametrize("value", ["earliest", "latest", "0x0000002A000000100001"])
def test_bootstrap_with_any_starting_lsn_is_refused(
    options: dict[str, object], tmp_path: Path, value: str
) -> None:
    options["STARTINGLSN"] = value
    with pytest.raises(ConfigError, match="bootstrap=True and startingLsn: use one or the other"):
        check(options, tmp_path, bootstrap=True)


def test_resnapshot_needs_fail_on_data_loss_true(
    options: dict[str, object], tmp_path: Path
) -> None:
    options["failOnDataLoss"] = "false"
    with pytest.raises(ConfigError, match="needs failOnDataLoss true"):
        check(options, tmp_path)
    options["failOnDataLoss"] = "maybe"
    with pytest.raises(ValueError, match="failOnDataLoss"):
        check(options, tmp_path)


def test_a_uri_checkpoint_is_allowed_with_fail_and_a_drive_letter_is_no_scheme(
    options: dict[str, object], tmp_path: Path
) -> None:
    args = check(options, tmp_path, on_data_loss="fail", checkpoint="abfss://c@a/x")
    assert args.checkpoint == "abfss://c@a/x"
    assert args.checkpoint_is_spark_only
    monkey = check(options, tmp_path, checkpoint="C:ckpt")  # no scheme: a relative name
    assert Path(monkey.checkpoint).is_absolute()
    assert not monkey.checkpoint_is_spark_only


@pytest.mark.parametrize("path", ["/dbfs/ckpt/orders", "/dbfs"])
def test_a_dbfs_checkpoint_is_allowed_with_fail_like_a_uri(
    options: dict[str, object], tmp_path: Path, path: str
) -> None:
    args = check(options, tmp_path, on_data_loss="fail", checkpoint=path)
    assert args.checkpoint == path
    assert args.checkpoint_is_spark_only


def test_a_uri_checkpoint_runs_with_fail_beside_tables_and_metrics_on_s3a(
    options: dict[str, object], tmp_path: Path
) -> None:
    on_s3 = {**options, "metricsPath": "s3a://bucket/metrics"}
    args = check(
        on_s3,
        tmp_path,
        on_data_loss="fail",
        checkpoint="s3a://bucket/ckpt/orders",
        target="s3a://bucket/bronze/orders",
        facts_table="s3a://bucket/facts",
    )
    assert args.checkpoint == "s3a://bucket/ckpt/orders"
    assert args.checkpoint_is_spark_only


@pytest.mark.parametrize(
    "path", ["/dbfs/ckpt/orders", "dbfs:/ckpt/orders", "s3a://bucket/ckpt/orders"]
)
def test_a_checkpoint_only_spark_reads_is_refused_with_resnapshot_pointing_to_fail(
    options: dict[str, object], tmp_path: Path, path: str
) -> None:
    with pytest.raises(ConfigError) as info:
        check(options, tmp_path, checkpoint=path)
    message = str(info.value)
    assert message.startswith("on_data_loss='resnapshot' reads Spark's offset log with Python")
    assert f"checkpoint {path} must be a local path or a Volume" in message
    assert message.endswith("or run with on_data_loss='fail'")


def test_a_relative_checkpoint_is_made_absolute(
    options: dict[str, object], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert check(options, tmp_path, checkpoint="ckpt").checkpoint == str(tmp_path / "ckpt")


def test_a_starting_lsn_counts_as_given_in_any_spelling_unless_none() -> None:
    assert given_option({" startinglsn ": "latest"}, "startingLsn") is True
    assert given_option({"STARTINGLSN": "earliest"}, "startingLsn") is True
    assert given_option({"StartingLsn": None}, "startingLsn") is False
    assert given_option({"snapshotLsn": "0x1"}, "startingLsn") is False


# The keywords of pyspark's DataStreamWriter.trigger, with values it accepts.
TRIGGERS_SPARK_TAKES = [
    None,
    {"processingTime": "10 seconds"},
    {"processingTime": "1 minute"},
    # each accepted by Spark 4.2's Trigger.ProcessingTime, tried one by one
    {"processingTime": "INTERVAL 5 SECONDS"},
    {"processingTime": "1 minute 30 seconds"},
    {"processingTime": " 5.5 second "},
    {"processingTime": "100 milliseconds"},
    {"processingTime": "0 seconds"},
    {"processingTime": "1 week"},
    {"once": True},
    {"availableNow": True},
]


@pytest.mark.parametrize("trigger", TRIGGERS_SPARK_TAKES, ids=str)
def test_a_trigger_spark_takes_is_passed_on_unchanged(
    options: dict[str, object], tmp_path: Path, trigger: Any
) -> None:
    assert check(options, tmp_path, trigger=trigger).trigger == trigger


BAD_TRIGGERS = [
    ({"bogus": 1}, "'bogus' is not a keyword of DataStreamWriter.trigger"),
    ({"processingtime": "1 second"}, "'processingtime' is not a keyword"),
    ({}, "gives 0 keys where Spark takes exactly one"),
    ({"once": True, "availableNow": True}, "gives 2 keys where Spark takes exactly one"),
    ({"processingTime": ""}, "processingTime takes an interval Spark reads"),
    ({"processingTime": "  "}, "processingTime takes an interval Spark reads"),
    ({"processingTime": 10}, "processingTime takes an interval Spark reads"),
    # each refused by Spark 4.2's Trigger.ProcessingTime, tried one by one
    ({"processingTime": "10 sec"}, "no abbreviations"),
    ({"processingTime": "10s"}, "processingTime takes an interval Spark reads"),
    ({"processingTime": "5"}, "processingTime takes an interval Spark reads"),
    ({"processingTime": "1 month"}, "no months or years"),
    ({"processingTime": "-5 seconds"}, "numbers >= 0"),
    ({"processingTime": "1 minute, 30 seconds"}, "processingTime takes an interval Spark reads"),
    ({"processingTime": "5seconds"}, "processingTime takes an interval Spark reads"),
    ({"once": False}, "once takes True only"),
    ({"availableNow": 1}, "availableNow takes True only"),
    ({"availableNow": "true"}, "availableNow takes True only"),
    ({"continuous": "1 second"}, "continuous processing runs no foreachBatch sink"),
    ("availableNow", "trigger='availableNow': pass one of"),
    ([("once", True)], "trigger=[('once', True)]: pass one of"),
]


@pytest.mark.parametrize(("trigger", "message"), BAD_TRIGGERS, ids=[b[1] for b in BAD_TRIGGERS])
def test_a_trigger_spark_would_refuse_or_foreach_batch_cannot_run_is_refused_first(
    options: dict[str, object], tmp_path: Path, trigger: Any, message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        check(options, tmp_path, trigger=trigger)
    assert message in str(caught.value)
    assert not (tmp_path / "ckpt").exists()


def test_the_interval_takes_zero_to_a_century_of_days(
    options: dict[str, object], tmp_path: Path
) -> None:
    assert check(options, tmp_path, interval_days=0).interval_days == 0.0
    assert check(options, tmp_path, interval_days=36_500).interval_days == 36_500.0
    for value in (36_500.5, 10**300, 1e308):
        with pytest.raises(ConfigError) as caught:
            check(options, tmp_path, interval_days=value)
        assert f"resnapshot_interval_days={value!r}: pass a number of days from 0 to 36,500" in (
            str(caught.value)
        )


def test_gap_deletes_is_off_unless_asked_and_carried_when_asked(
    options: dict[str, object], tmp_path: Path
) -> None:
    assert check(options, tmp_path).gap_deletes is False
    assert check(options, tmp_path, gap_deletes=True).gap_deletes is True


@pytest.mark.parametrize("mode", ["initial", "when_needed"])
def test_to_delta_refuses_the_source_s_own_snapshots_naming_the_option(
    options: dict[str, object], tmp_path: Path, mode: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        check({**options, "snapshotMode": mode}, tmp_path, on_data_loss="fail")
    assert f"option snapshotMode={mode}" in str(caught.value)
    assert "spark.readStream.format('mssql_cdc')" in str(caught.value)
    check({**options, "snapshotMode": "never"}, tmp_path)  # today's behaviour passes
