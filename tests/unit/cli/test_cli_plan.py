"""`mssql-cdc plan`: argument handling that needs no Spark (the plan itself is a Spark test)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mssql_cdc.cli import main
from mssql_cdc.cli.plan import EXIT_CODES, render
from mssql_cdc.emulator import Emulator
from tests.unit.support.driver_faults import unreachable_options


def argv(options: Path) -> list[str]:
    return [
        "plan", "--options", str(options), "--target", "bronze.orders", "--app-id", "a",
        "--checkpoint", "/tmp/ckpt", "--facts", "ops.facts",
    ]  # fmt: skip


def test_the_exit_codes_name_each_action() -> None:
    assert EXIT_CODES == {"none": 0, "resnapshot": 10, "blocked": 11}


@pytest.mark.parametrize("content", ["not json", "[1, 2]"])
def test_an_unreadable_options_file_exits_2_naming_it(
    tmp_path: Path, content: str, capsys: pytest.CaptureFixture[str]
) -> None:
    options = tmp_path / "options.json"
    options.write_text(content)
    assert main(argv(options)) == 2
    assert str(options) in capsys.readouterr().err


def test_a_missing_options_file_exits_2(tmp_path: Path) -> None:
    assert main(argv(tmp_path / "missing.json")) == 2


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"options": {"backend": "emulator"}}, "emulatorPath"),
        ({"--app-id": "orders#1"}, "app_id"),
        ({"--checkpoint": "s3://bucket/ckpt"}, "s3://bucket/ckpt"),
        ({"--interval-days": "nan"}, "resnapshot_interval_days"),
    ],
    ids=["a bad option", "a bad app_id", "a URI checkpoint", "a NaN interval"],
)
def test_a_bad_argument_exits_2_naming_it_before_spark_starts(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    change: dict[str, Any],
    named: str,
) -> None:
    def no_spark(*args: object, **kwargs: object) -> None:
        raise AssertionError("mssql-cdc plan started Spark before it checked its arguments")

    monkeypatch.setattr("mssql_cdc.spark.local_session", no_spark)
    Emulator.create(tmp_path / "e.db").close()
    options = tmp_path / "options.json"
    given = {"backend": "emulator", "emulatorPath": str(tmp_path / "e.db"), "captureInstance": "ci"}
    if "options" in change:
        given = {"backend": "emulator", "captureInstance": "ci"}
    options.write_text(json.dumps(given))
    args = argv(options)
    for flag, value in change.items():
        if flag in args:
            args[args.index(flag) + 1] = value
        elif flag.startswith("--"):
            args += [flag, value]
    assert main(args) == 2
    assert named in capsys.readouterr().err


def a_plan(estimate: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "action": "resnapshot", "generation": 0, "next_generation": 1, "start": None,
        "lost_from_ts": None, "lost_to_ts": None, "reuse": None, "mode": "full",
        "interval_ok": True, "reason": "", "estimate": estimate,
        "forecast": {"headroom_hours": None, "trend_hours_per_day": None,
                     "loss_by_trend_at": None, "loss_if_stopped_at": None, "samples": 0},
    }  # fmt: skip


@pytest.mark.parametrize(
    ("estimate", "expected"),
    [
        (
            {"rows": 5, "rows_per_second": None, "seconds": None, "retention_hours": 72.0,
             "fits": None},
            "duration unknown for 5 rows: too few rows measured to estimate (no earlier full "
            "snapshot of at least 1,000 rows); retention 72.0 h; fits: unknown (needs both the "
            "duration and the retention)",
        ),
        (
            {"rows": None, "rows_per_second": None, "seconds": None, "retention_hours": None,
             "fits": None},
            "duration unknown: the source gives no row count; retention unknown (no micro-batch "
            "of the last 7 days recorded it); fits: unknown (needs both the duration and the "
            "retention)",
        ),
        (
            {"rows": 1_000_000, "rows_per_second": 100.0, "seconds": 10_000.0,
             "retention_hours": 1.0, "fits": False},
            "about 10,000 s to read 1,000,000 rows; retention 1.0 h; fits: no, more than half "
            "the retention",
        ),
    ],
    ids=["too few rows measured", "nothing known", "an estimate that does not fit"],
)  # fmt: skip
def test_the_plan_text_says_why_a_figure_is_unknown_and_never_none(
    estimate: dict[str, Any], expected: str
) -> None:
    text = render(a_plan(estimate))
    assert f"estimate    {expected}" in text.splitlines()
    assert "None" not in text


@pytest.mark.parametrize("backend", ["pymssql", "mssql-python"])
def test_a_server_that_does_not_answer_exits_1_naming_it_without_the_password(
    tmp_path: Path, backend: str, capsys: pytest.CaptureFixture[str]
) -> None:
    options, port = unreachable_options(tmp_path, backend, "dbo_orders")
    code = main(argv(options))
    err = capsys.readouterr().err
    assert code == 1, err
    assert err.startswith(f"mssql-cdc plan: cannot connect to SQL Server '127.0.0.1,{port}'")
    assert "reachable" in err
    assert "Traceback" not in err
    assert "S3cret!pw" not in err
