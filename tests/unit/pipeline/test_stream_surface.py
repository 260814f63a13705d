"""The public face of stream(): names, keyword-only modes, defaults, and refusals before I/O."""

from __future__ import annotations

import inspect
import typing
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import mssql_cdc
from mssql_cdc import CdcStream, stream
from mssql_cdc.errors import ConfigError
from mssql_cdc.pipeline import cdc_stream


def test_the_modes_of_to_delta_are_keyword_only_with_the_seeds_defaults() -> None:
    params = inspect.signature(CdcStream.to_delta).parameters
    assert list(params)[:5] == ["self", "target", "app_id", "checkpoint", "facts_table"]
    for name in ("trigger", "query_name", "bootstrap", "on_data_loss", "snapshot"):
        assert params[name].kind is inspect.Parameter.KEYWORD_ONLY, name
    assert params["on_data_loss"].default == "fail"
    assert params["snapshot"].default == "full"
    assert params["resnapshot_interval_days"].default == 7.0
    assert params["bootstrap"].default is False


def test_on_data_loss_and_snapshot_are_typed_with_their_literals() -> None:
    def choices(method: Any, name: str) -> tuple[object, ...]:
        # annotations are postponed strings; the module's names resolve them
        annotation = inspect.signature(method).parameters[name].annotation
        return typing.get_args(eval(annotation, vars(cdc_stream)))

    assert choices(CdcStream.to_delta, "on_data_loss") == ("fail", "resnapshot")
    assert choices(CdcStream.to_delta, "snapshot") == ("full", "chunked")
    assert choices(CdcStream.plan_recovery, "snapshot") == ("full", "chunked")


def test_the_package_exports_stream_and_its_results() -> None:
    for name in ("stream", "CdcStream", "RecoveryPlan", "Offset"):
        assert name in mssql_cdc.__all__, name
        assert getattr(mssql_cdc, name) is not None


class NoSpark(SparkSession):
    """A session by type whose any attribute access is an I/O attempt the validation must not
    make."""

    def __init__(self) -> None:  # no JVM
        pass

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"spark.{name} was used before validation finished")


def test_an_invalid_call_fails_before_touching_spark_or_the_checkpoint(tmp_path: Path) -> None:
    db = tmp_path / "e.db"
    db.write_bytes(b"")
    cdc = stream(
        NoSpark(),
        {"backend": "emulator", "emulatorPath": str(db), "captureInstance": "dbo_orders"},
    )
    ckpt = tmp_path / "ckpt"
    with pytest.raises(ConfigError, match="needs a facts_table"):
        cdc.to_delta("bronze.orders", "a", str(ckpt), on_data_loss="resnapshot")
    with pytest.raises(ConfigError, match="must be a local path or a Volume"):
        cdc.plan_recovery("bronze.orders", "a", "dbfs:/ckpt", "ops.facts")
    assert not ckpt.exists()


@pytest.fixture
def offline(tmp_path: Path) -> CdcStream:
    """A stream over an empty emulator file, with a Spark session that refuses every use."""
    (tmp_path / "e.db").write_bytes(b"")
    options = {"backend": "emulator", "emulatorPath": str(tmp_path / "e.db")}
    return stream(NoSpark(), {**options, "captureInstance": "dbo_orders"})


def test_a_mode_outside_its_literal_is_still_refused_at_run_time(
    offline: CdcStream, tmp_path: Path
) -> None:
    ckpt = str(tmp_path / "ckpt")
    with pytest.raises(ConfigError, match="on_data_loss='skip': pass 'fail' or 'resnapshot'"):
        offline.to_delta("bronze.orders", "a", ckpt, "ops.facts", on_data_loss="skip")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="snapshot='fast': pass 'full' or 'chunked'"):
        offline.plan_recovery("bronze.orders", "a", ckpt, "ops.facts", snapshot="fast")  # type: ignore[arg-type]


def test_unknown_option_names_are_warned_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "e.db"
    db.write_bytes(b"")
    options = {
        "backend": "emulator",
        "emulatorPath": str(db),
        "captureInstance": "dbo_orders",
        "captureInstanse": "typo",
    }
    stream(NoSpark(), options)
    stream(NoSpark(), options)
    warned = [r for r in caplog.records if "captureInstanse" in r.getMessage()]
    assert len(warned) == 1
