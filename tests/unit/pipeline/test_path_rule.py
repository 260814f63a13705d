"""The path rule at to_delta's and fan_out's checks: no stream's checkpoint, tables or metrics
folder is another, or inside another, however the paths are spelled (decision 1310)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from mssql_cdc.errors import ConfigError
from mssql_cdc.options.config import SourceConfig
from mssql_cdc.pipeline.arguments import check_to_delta
from mssql_cdc.pipeline.fan_out_plan import JobSettings, plan_streams


@pytest.fixture
def options(tmp_path: Path) -> dict[str, object]:
    db = tmp_path / "e.db"
    db.write_bytes(b"")  # the config only checks that the file exists
    return {"backend": "emulator", "emulatorPath": str(db), "captureInstance": "dbo_orders"}


def check(options: Mapping[str, object], tmp_path: Path, **kw: Any) -> Any:
    args: dict[str, Any] = {
        "target": str(tmp_path / "bronze" / "orders"),
        "app_id": "orders",
        "checkpoint": str(tmp_path / "checkpoints" / "orders"),
        "facts_table": str(tmp_path / "facts"),
        "bootstrap": False,
        "on_data_loss": "resnapshot",
        "interval_days": 7.0,
        "mode": "full",
    }
    args.update(kw)
    return check_to_delta(SourceConfig.from_options(options), options, **args)


def test_separate_folders_are_accepted_as_before(
    options: dict[str, object], tmp_path: Path
) -> None:
    args = check(options, tmp_path)
    assert args.checkpoint == str(tmp_path / "checkpoints" / "orders")
    assert args.target == str(tmp_path / "bronze" / "orders")


@pytest.mark.parametrize("loss", ["fail", "resnapshot"])
def test_a_checkpoint_that_is_the_target_is_refused_naming_both(
    options: dict[str, object], tmp_path: Path, loss: str
) -> None:
    target = str(tmp_path / "bronze" / "orders")
    with pytest.raises(ConfigError, match="the same folder") as refused:
        check(options, tmp_path, checkpoint=target, target=target + "/", on_data_loss=loss)
    assert "checkpoint" in str(refused.value)
    assert "target" in str(refused.value)
    assert "VACUUM" in str(refused.value)


@pytest.mark.parametrize(
    ("checkpoint", "target", "facts"),
    [
        ("bronze/orders/_checkpoint", "bronze/orders", "facts"),
        ("facts/_ckpt", "bronze/orders", "facts"),
        ("checkpoints/orders", "checkpoints/orders/bronze", "facts"),
        ("checkpoints/orders", "bronze/orders", "checkpoints/orders/facts"),
        ("checkpoints/orders", "bronze/orders", "bronze/orders/_facts"),
    ],
    ids=[
        "a checkpoint inside the target",
        "a checkpoint inside the facts table",
        "a target inside the checkpoint",
        "a facts table inside the checkpoint",
        "a facts table inside the target",
    ],
)
def test_one_folder_inside_another_is_refused(
    options: dict[str, object], tmp_path: Path, checkpoint: str, target: str, facts: str
) -> None:
    with pytest.raises(ConfigError, match="lies inside"):
        check(
            options,
            tmp_path,
            checkpoint=str(tmp_path / checkpoint),
            target=str(tmp_path / target),
            facts_table=str(tmp_path / facts),
        )


def test_a_checkpoint_reaching_the_target_through_a_symbolic_link_is_refused(
    options: dict[str, object], tmp_path: Path
) -> None:
    (tmp_path / "bronze" / "orders").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "bronze", target_is_directory=True)
    with pytest.raises(ConfigError, match="lies inside") as refused:
        check(options, tmp_path, checkpoint=str(tmp_path / "link" / "orders" / "_ckpt"))
    assert "resolves to" in str(refused.value)


def test_a_checkpoint_inside_another_streams_generations_is_refused(
    options: dict[str, object], tmp_path: Path
) -> None:
    other = tmp_path / "checkpoints" / "items"
    (other / "_generations" / "1").mkdir(parents=True)
    (other / "offsets").mkdir()
    with pytest.raises(ConfigError, match="another stream's checkpoint"):
        check(options, tmp_path, checkpoint=str(other / "_generations" / "1"))


def test_a_checkpoint_below_a_folder_holding_the_state_file_is_refused(
    options: dict[str, object], tmp_path: Path
) -> None:
    other = tmp_path / "checkpoints" / "items"
    other.mkdir(parents=True)
    (other / "_mssql_cdc_generation.json").write_text(json.dumps({}))
    with pytest.raises(ConfigError, match="another stream's checkpoint"):
        check(options, tmp_path, checkpoint=str(other / "orders"))


def test_a_metrics_folder_inside_the_target_is_refused(
    options: dict[str, object], tmp_path: Path
) -> None:
    metrics = {**options, "metricsPath": str(tmp_path / "bronze" / "orders" / "_metrics")}
    with pytest.raises(ConfigError, match="lies inside"):
        check(metrics, tmp_path)


def test_a_checkpoint_in_the_sinks_metrics_folder_is_refused(
    options: dict[str, object], tmp_path: Path
) -> None:
    metrics = {**options, "metricsPath": str(tmp_path / "m")}
    with pytest.raises(ConfigError, match="the metrics folder of app_id 'orders'"):
        check(metrics, tmp_path, checkpoint=str(tmp_path / "m" / "orders"))


def test_a_metrics_folder_inside_the_checkpoint_is_accepted_as_before(
    options: dict[str, object], tmp_path: Path
) -> None:
    metrics = {**options, "metricsPath": str(tmp_path / "checkpoints" / "orders" / "metrics")}
    check(metrics, tmp_path)


@pytest.fixture
def settings(tmp_path: Path) -> JobSettings:
    db = tmp_path / "e.db"
    db.write_bytes(b"")
    return JobSettings(
        options={"backend": "emulator", "emulatorPath": str(db)},
        facts_table=str(tmp_path / "facts"),
        root=str(tmp_path / "lake"),
        on_data_loss="resnapshot",
    )


@pytest.mark.parametrize(
    "spelling",
    ["lake/bronze/y/../x", "lake/bronze//x/", "relative", "link/x"],
)
def test_two_streams_writing_one_target_through_two_spellings_are_refused(
    settings: JobSettings,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    spelling: str,
) -> None:
    (tmp_path / "lake" / "bronze" / "y").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "lake" / "bronze", target_is_directory=True)
    monkeypatch.chdir(tmp_path / "lake" / "bronze")
    second = "./x" if spelling == "relative" else str(tmp_path) + "/" + spelling
    streams = [
        {"capture_instance": "a", "target": str(tmp_path / "lake" / "bronze" / "x")},
        {"capture_instance": "b", "target": second},
    ]
    with pytest.raises(ConfigError) as refused:
        plan_streams(streams, settings)
    message = str(refused.value)
    assert "streams[0] (a): target" in message
    assert "streams[1] (b): target" in message


def test_two_streams_sharing_a_checkpoint_through_a_symbolic_link_are_refused(
    settings: JobSettings, tmp_path: Path
) -> None:
    (tmp_path / "ck" / "a").mkdir(parents=True)
    (tmp_path / "alias").symlink_to(tmp_path / "ck", target_is_directory=True)
    streams = [
        {"capture_instance": "a", "checkpoint": str(tmp_path / "ck" / "a")},
        {"capture_instance": "b", "checkpoint": os.path.join(tmp_path, "alias", "a")},
    ]
    with pytest.raises(ConfigError, match="the same folder") as refused:
        plan_streams(streams, settings)
    assert "streams[0] (a): checkpoint" in str(refused.value)
    assert "streams[1] (b): checkpoint" in str(refused.value)


def test_one_streams_checkpoint_inside_anothers_generations_is_refused_in_one_job(
    settings: JobSettings, tmp_path: Path
) -> None:
    streams = [
        {"capture_instance": "a"},
        {
            "capture_instance": "b",
            "checkpoint": str(tmp_path / "lake/checkpoints/a/_generations/1"),
        },
    ]
    with pytest.raises(ConfigError, match="lies inside"):
        plan_streams(streams, settings)


def test_one_streams_target_inside_anothers_checkpoint_is_refused(
    settings: JobSettings, tmp_path: Path
) -> None:
    streams = [
        {"capture_instance": "a"},
        {"capture_instance": "b", "target": str(tmp_path / "lake/checkpoints/a/bronze")},
    ]
    with pytest.raises(ConfigError, match="lies inside") as refused:
        plan_streams(streams, settings)
    assert "streams[0] (a): checkpoint" in str(refused.value)


def test_streams_in_separate_folders_sharing_the_facts_table_are_accepted(
    settings: JobSettings,
) -> None:
    planned = plan_streams([{"capture_instance": "a"}, {"capture_instance": "b"}], settings)
    assert len(planned) == 2


def test_two_streams_naming_one_catalog_table_two_ways_are_refused(
    settings: JobSettings,
) -> None:
    streams = [
        {"capture_instance": "a", "target": "bronze.orders"},
        {"capture_instance": "b", "target": "`bronze`.`orders`"},
    ]
    with pytest.raises(ConfigError, match="names the same table as streams"):
        plan_streams(streams, settings)
