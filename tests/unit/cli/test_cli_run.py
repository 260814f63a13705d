"""`mssql-cdc run JOB`: the job file is read and checked whole before Spark starts (the run
itself is the fan-out Spark test's subject)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mssql_cdc.cli import main
from mssql_cdc.cli.run import job_arguments, read_job


@pytest.fixture(autouse=True)
def no_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("mssql-cdc run started Spark before it checked the job")

    monkeypatch.setattr("mssql_cdc.spark.local_session", refuse)


def a_job(tmp_path: Path) -> dict[str, Any]:
    db = tmp_path / "e.db"
    db.write_bytes(b"")
    return {
        "options": {"backend": "emulator", "emulatorPath": str(db)},
        "facts_table": str(tmp_path / "facts"),
        "root": str(tmp_path / "lake"),
        "streams": [{"capture_instance": "dbo_orders"}, {"capture_instance": "dbo_items"}],
    }


def run(tmp_path: Path, job: object, name: str = "job.json") -> int:
    path = tmp_path / name
    path.write_text(json.dumps(job) if name.endswith(".json") else str(job))
    return main(["run", str(path)])


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"on_falure": "stop"}, "unknown key 'on_falure' (did you mean on_failure?)"),
        ({"facts_table": None}, "facts_table=None"),
        ({"streams": [{"capture_instance": "a"}, {"capture_instance": "b", "snapshot": "x"}]},
         "streams[1] (b): snapshot='x'"),
        ({"streams": [{"capture_instance": "../up"}]}, "cannot derive target"),
        ({"max_snapshots": 0}, "max_snapshots=0"),
        ({"on_failure": "ignore"}, "on_failure='ignore'"),
        ({"trigger": {"availableNow": False}}, "availableNow takes True only"),
    ],
    ids=["a mistyped key", "no facts table", "a bad mode of one stream", "an unsafe name",
         "no snapshot slot", "an unknown policy", "a bad trigger"],
)  # fmt: skip
def test_a_bad_job_exits_2_naming_the_defect_before_spark_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict[str, Any], named: str
) -> None:
    job = {**a_job(tmp_path), **change}
    assert run(tmp_path, job) == 2
    assert named in capsys.readouterr().err


@pytest.mark.parametrize(
    ("content", "named"),
    [("not json", "not a JSON job file"), ("[1]", "must hold one object")],
    ids=["not JSON", "a list"],
)
def test_an_unreadable_job_file_exits_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, named: str
) -> None:
    path = tmp_path / "job.json"
    path.write_text(content)
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err
    assert named in err


def test_a_missing_job_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(tmp_path / "missing.json")]) == 2
    assert "cannot read the job file" in capsys.readouterr().err


def test_a_job_without_streams_or_facts_table_is_refused(tmp_path: Path) -> None:
    for key in ("streams", "facts_table"):
        job = a_job(tmp_path)
        del job[key]
        with pytest.raises(ValueError, match=f"the job has no '{key}'"):
            job_arguments(job, "job.json")


def test_a_yaml_job_reads_as_its_json_twin(tmp_path: Path) -> None:
    job = a_job(tmp_path)
    text = (
        f"options:\n  backend: emulator\n  emulatorPath: {job['options']['emulatorPath']}\n"
        f"facts_table: {job['facts_table']}\nroot: {job['root']}\n"
        "streams:\n  - capture_instance: dbo_orders\n  - capture_instance: dbo_items\n"
    )
    path = tmp_path / "job.yaml"
    path.write_text(text)
    assert read_job(str(path)) == job


@pytest.mark.parametrize("value", ["inf", "nan", "-1", "1e300"])
def test_a_timeout_that_is_not_finite_or_is_negative_exits_2_naming_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    path = tmp_path / "job.json"
    path.write_text(json.dumps(a_job(tmp_path)))
    with pytest.raises(SystemExit) as caught:
        main(["run", str(path), "--timeout", value])
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert f"argument --timeout: '{value}' is out of range" in err
    assert "leave --timeout out to wait until the streams end" in err


def test_a_timeout_of_zero_seconds_is_still_accepted() -> None:
    from mssql_cdc.cli.run import timeout_seconds

    assert timeout_seconds("0") == 0.0
    assert timeout_seconds("2.5") == 2.5
