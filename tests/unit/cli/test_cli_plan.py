"""`mssql-cdc plan`: argument handling that needs no Spark (the plan itself is a Spark test)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mssql_cdc.cli import main
from mssql_cdc.cli.plan import EXIT_CODES
from mssql_cdc.emulator import Emulator


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
