"""`mssql-cdc plan`: argument handling that needs no Spark (the plan itself is a Spark test)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mssql_cdc.cli import main
from mssql_cdc.cli.plan import EXIT_CODES


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
