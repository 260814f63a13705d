"""Every entry point that takes an app_id refuses one outside the grammar before any I/O."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mssql_cdc.cli import main
from mssql_cdc.options.config import SourceConfig
from mssql_cdc.pipeline.arguments import check_to_delta
from mssql_cdc.sink.writer import delta_sink
from mssql_cdc.snapshot.backfill import backfill
from mssql_cdc.snapshot.full import take_full

# A path out of the metrics folder, and generation 1's sink id of the stream "orders".
BAD = ["..", "a/b", "orders.g1"]


def config(tmp_path: Path) -> SourceConfig:
    db = tmp_path / "e.db"
    db.write_bytes(b"")  # the config only checks that the file exists
    options = {"backend": "emulator", "emulatorPath": str(db), "captureInstance": "dbo_orders"}
    return SourceConfig.from_options(options)


def to_delta(tmp_path: Path, app_id: str) -> Any:  # also plan_recovery's check
    cfg = config(tmp_path)
    return check_to_delta(
        cfg, {}, target="bronze.orders", app_id=app_id, checkpoint=str(tmp_path / "ckpt"),
        facts_table="ops.facts", bootstrap=False, on_data_loss="resnapshot",
        interval_days=7.0, mode="full",
    )  # fmt: skip


def sink(tmp_path: Path, app_id: str) -> Any:
    return delta_sink("bronze.orders", app_id, "ops.facts", metrics_path=tmp_path / "m")


def snapshot(tmp_path: Path, app_id: str) -> Any:  # CdcStream.snapshot(app_id=...)
    return take_full(
        None, config(tmp_path), "bronze.orders", kind="manual", generation=0,  # type: ignore[arg-type]
        new=False, app_id=app_id, facts_table="ops.facts",
    )  # fmt: skip


def backfill_call(tmp_path: Path, app_id: str) -> Any:
    return backfill(None, config(tmp_path), "bronze.orders", app_id=app_id, facts_table="ops.facts")  # type: ignore[arg-type]


ENTRY_POINTS: dict[str, Callable[[Path, str], Any]] = {
    "to_delta": to_delta,
    "delta_sink": sink,
    "snapshot": snapshot,
    "backfill": backfill_call,
}


@pytest.mark.parametrize("app_id", BAD)
@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_every_entry_point_refuses_an_app_id_outside_the_grammar(
    tmp_path: Path, entry: str, app_id: str
) -> None:
    with pytest.raises(ValueError, match="an app_id is 1 to") as refused:
        ENTRY_POINTS[entry](tmp_path, app_id)
    assert f"app_id={app_id!r}" in str(refused.value)
    assert {p.name for p in tmp_path.iterdir()} <= {"e.db"}  # nothing written


@pytest.mark.parametrize("app_id", BAD)
def test_the_status_cli_refuses_an_app_id_outside_the_grammar(
    tmp_path: Path, app_id: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["status", str(tmp_path), f"--app-id={app_id}"])
    _, err = capsys.readouterr()
    assert code == 2
    assert f"app_id={app_id!r}" in err
    assert "an app_id is 1 to" in err
