"""Public entry points given a wrong type for a first argument raise a ConfigError naming it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from mssql_cdc import CdcStream, apply_changes, delta_sink, stream
from mssql_cdc.errors import ConfigError


class UnusedSession(SparkSession):
    """A SparkSession by type whose every use fails: the checks must come first."""

    def __init__(self) -> None:  # no JVM
        pass

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"spark.{name} was used before the arguments were checked")


@pytest.fixture
def options(tmp_path: Path) -> dict[str, object]:
    (tmp_path / "e.db").write_bytes(b"")
    return {"backend": "emulator", "emulatorPath": str(tmp_path / "e.db"), "captureInstance": "c"}


@pytest.fixture
def cdc(options: dict[str, object]) -> CdcStream:
    return stream(UnusedSession(), options)


NOT_SESSIONS = [(None, "got None"), ([], "got a list"), ("spark", "got a str")]


@pytest.mark.parametrize(("spark", "got"), NOT_SESSIONS, ids=[n[1] for n in NOT_SESSIONS])
def test_stream_and_apply_changes_name_a_spark_that_is_no_session(
    options: dict[str, object], spark: Any, got: str
) -> None:
    expected = f"spark must be a SparkSession ({got}); pass the active session"
    with pytest.raises(ConfigError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        stream(spark, options)
    with pytest.raises(ConfigError, match="spark must be a SparkSession"):
        apply_changes(spark, "lake.bronze", "lake.silver", keys=["id"], control_table="ops.c")


@pytest.mark.parametrize(("options", "got"), [(None, "got None"), ([("a", "b")], "got a list")])
def test_stream_names_options_that_are_no_mapping(options: Any, got: str) -> None:
    with pytest.raises(ConfigError, match=f"options must be a mapping of option names .*{got}"):
        stream(UnusedSession(), options)


def test_stream_names_an_option_name_that_is_no_string(options: dict[str, object]) -> None:
    with pytest.raises(ConfigError, match="option names must be strings"):
        stream(UnusedSession(), {**options, 7: "x"})


NOT_TABLES = [None, ["bronze"], 7, ""]


@pytest.mark.parametrize("target", NOT_TABLES, ids=repr)
def test_every_method_names_a_target_that_is_no_table(
    cdc: CdcStream, tmp_path: Path, target: Any
) -> None:
    named = f"target={target!r}"
    ckpt = str(tmp_path / "ckpt")
    calls = [
        lambda: cdc.to_delta(target, "a", ckpt, "ops.facts"),
        lambda: cdc.plan_recovery(target, "a", ckpt, "ops.facts"),
        lambda: cdc.snapshot(target),
        lambda: cdc.backfill(target, app_id="a", facts_table="ops.facts"),
        lambda: delta_sink(target, "a", "ops.facts"),
    ]
    for call in calls:
        with pytest.raises(ConfigError) as caught:
            call()
        assert named in str(caught.value)
    assert not (tmp_path / "ckpt").exists()
