"""`mssql-cdc reconcile`: argument handling that needs no Spark, and the text it prints (the
comparison itself is a Spark story, tests/spark/reconcile)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mssql_cdc.cli import main
from mssql_cdc.cli.reconcile import render
from tests.unit.support.driver_faults import unreachable_options


def _options(tmp_path: Path) -> Path:
    options = tmp_path / "options.json"
    options.write_text(json.dumps({"captureInstance": "dbo_t", "backend": "emulator",
                                   "emulatorPath": str(tmp_path / "e.db")}))  # fmt: skip
    return options


def test_an_unreadable_options_file_exits_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    options = tmp_path / "options.json"
    options.write_text("[1]")
    assert main(["reconcile", "--options", str(options), "--target", "s", "--control", "c"]) == 2
    assert str(options) in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([], "needs control_table"),
        (["--control", "c", "--tiles", "0"], "tiles must be an int from 1 to 100000"),
        (["--control", "c", "--facts", "f"], "facts_table needs app_id"),
        (
            ["--control", "c", "--repair", "--app-id", "a", "--checkpoint", "k", "--facts", "f"],
            "reconcile the bronze table with against='bronze' and repair=True",
        ),
        (
            ["--against", "bronze", "--repair", "--app-id", "a", "--facts", "f"],
            "repair=True needs the stream's checkpoint",
        ),
        (["--against", "bronze", "--repair"], "needs the stream's app_id, checkpoint, facts_table"),
        (["--control", "c", "--sampled", "1.5"], "sampled=1.5 is no fraction"),
        (["--control", "c", "--sampled", "0"], "sampled=0 is no row count"),
        (["--control", "c", "--sampled", "a tenth"], "sampled must be a number (got 'a tenth')"),
        (["--control", "c", "--report-table", "/lake/../r"], "climbs with '..'"),
    ],
    ids=[
        "silver without a control table",
        "no tiles",
        "facts without an app id",
        "a silver target to repair",
        "a repair without the checkpoint",
        "a repair without the stream's arguments",
        "a sample above one",
        "a sample of no rows",
        "a sample in words",
        "a report path climbing with dot-dot",
    ],
)
def test_a_bad_argument_exits_2_before_spark_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    argv = ["reconcile", "--options", str(_options(tmp_path)), "--target", "s", *extra]
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_the_text_names_the_verdict_and_each_kind_of_key() -> None:
    found = {
        "target": "/lake/silver", "against": "silver", "lsn": "0x0000002A000001F00004",
        "equal": False, "target_rows": 99, "source_rows": 100, "differing_tiles": 2, "tiles": 8,
        "missing": [17, 18], "missing_count": 2, "extra": [], "extra_count": 0,
        "different": [[1, "a"]], "different_count": 1, "complete": True,
        "skipped_columns": ["price"],
    }  # fmt: skip
    assert render(found).splitlines() == [
        "/lake/silver (silver) against the source as of 0x0000002A000001F00004: different; "
        "99 rows against 100, 2 of 8 tiles differ",
        "  missing (2): 17, 18",
        '  different (1): [1, "a"]',
        "  not compared: price",
    ]


def test_the_text_says_how_many_tiles_a_repair_read_again() -> None:
    found = {
        "target": "/lake/bronze", "against": "bronze", "lsn": "0x0000002A000001F00004",
        "equal": False, "target_rows": 99, "source_rows": 100, "differing_tiles": 1, "tiles": 8,
        "missing": [17], "missing_count": 1, "extra": [], "extra_count": 0, "different": [],
        "different_count": 0, "complete": True, "skipped_columns": [], "repaired_tiles": 1,
    }  # fmt: skip
    assert render(found).splitlines()[1:] == [
        "  missing (1): 17",
        "  repaired: 1 tiles re-read into the stream's next generation; restart the stream, "
        "then run apply_changes",
    ]


def test_the_text_states_a_samples_bound() -> None:
    found = {
        "target": "/lake/silver", "against": "silver", "lsn": "0x0000002A000001F00004",
        "equal": True, "target_rows": 300, "source_rows": 300, "differing_tiles": 0, "tiles": 8,
        "missing": [], "missing_count": 0, "extra": [], "extra_count": 0, "different": [],
        "different_count": 0, "complete": True, "skipped_columns": [],
        "sampled": {"fraction": 0.01, "keys": 300, "differing": 0, "level": 0.95,
                    "share_below": 0.00994},
    }  # fmt: skip
    assert render(found).splitlines()[1:] == [
        "  sampled 1.0000% of the keys: 0 of 300 differ; below 0.994% of the table's keys "
        "differ at 95% confidence"
    ]


@pytest.mark.parametrize("backend", ["pymssql", "mssql-python"])
def test_a_server_that_does_not_answer_exits_1_naming_it_without_the_password(
    tmp_path: Path, backend: str, capsys: pytest.CaptureFixture[str]
) -> None:
    options, port = unreachable_options(tmp_path, backend, "dbo_t")
    code = main(["reconcile", "--options", str(options), "--target", "s", "--control", "c"])
    err = capsys.readouterr().err
    assert code == 1, err
    assert err.startswith(f"mssql-cdc reconcile: cannot connect to SQL Server '127.0.0.1,{port}'")
    assert "Traceback" not in err
    assert "S3cret!pw" not in err
