"""Job and options files are read as untrusted input: size, nesting, duplicate keys, numbers,
text encoding and YAML aliases are checked by one loader, and each refusal exits 2 naming the
file before anything is written or Spark starts (docs/security.md, 'Job and options files')."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mssql_cdc.cli import main
from mssql_cdc.cli.job_file import MAX_BYTES
from mssql_cdc.cli.output import MAX_MESSAGE


@pytest.fixture(autouse=True)
def no_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the CLI started Spark before it checked its files")

    monkeypatch.setattr("mssql_cdc.spark.local_session", refuse)


def job_text(tmp_path: Path) -> str:
    db = tmp_path / "e.db"
    db.write_bytes(b"")
    return json.dumps(
        {
            "options": {"backend": "emulator", "emulatorPath": str(db)},
            "facts_table": str(tmp_path / "facts"),
            "streams": [{"capture_instance": "dbo_orders"}],
        }
    )


def verbs(path: Path) -> list[list[str]]:
    """Every verb reading the file: `run` as a job, the others as `--options`."""
    stream = ["--target", "bronze.orders", "--app-id", "a", "--checkpoint", "/tmp/c"]
    return [
        ["run", str(path)],
        ["plan", "--options", str(path), *stream, "--facts", "ops.facts"],
        ["resnapshot", "--options", str(path), *stream, "--facts", "ops.facts"],
        ["reconcile", "--options", str(path), "--target", "silver.orders"],
    ]


def refused_everywhere(path: Path, capsys: pytest.CaptureFixture[str], *named: str) -> None:
    for argv in verbs(path):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert str(path) in err, argv
        assert "Traceback" not in err
        for words in named:
            assert words in err, (argv, err)


def test_a_json_file_with_a_key_given_twice_is_refused_naming_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "job.json"
    text = job_text(tmp_path)
    path.write_text(text[:-1] + ', "streams": []}')  # would silently drop the first list
    refused_everywhere(path, capsys, "the key 'streams' appears twice")


def test_a_yaml_job_with_a_key_given_twice_is_refused_naming_the_key_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(
        "streams:\n  - capture_instance: dbo_orders\nfacts_table: f\noptions: {}\nstreams: []\n"
    )
    assert main(["run", str(path)]) == 2
    assert "the key 'streams' appears twice in one mapping (line 5)" in capsys.readouterr().err


def test_a_yaml_merge_key_overridden_by_its_own_key_is_not_a_duplicate(tmp_path: Path) -> None:
    from mssql_cdc.cli.run import read_job

    path = tmp_path / "job.yaml"
    path.write_text("base: &b {x: 1, y: 2}\nother:\n  <<: *b\n  x: 3\n")
    assert read_job(str(path))["other"] == {"x": 3, "y": 2}


def test_nested_yaml_aliases_are_refused_without_expanding_or_echoing_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = ["options: {}", "streams: [{capture_instance: a}]", "facts_table:"]
    lines.append('  - &a ["xxxxxxxxxx","xxxxxxxxxx","xxxxxxxxxx","xxxxxxxxxx","xxxxxxxxxx"]')
    for previous, name in zip("abcdefghi", "bcdefghij", strict=True):
        lines.append(f"  - &{name} [{', '.join([f'*{previous}'] * 9)}]")
    path = tmp_path / "job.yaml"
    path.write_text("\n".join(lines) + "\n")
    assert path.stat().st_size < 600
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert "its YAML aliases expand it to more than 4 MiB" in err
    assert len(err) < 500


def test_a_yaml_alias_inside_itself_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "job.yaml"
    path.write_text("streams: &s [*s]\n")
    assert main(["run", str(path)]) == 2
    assert "a YAML alias refers to a value that holds it" in capsys.readouterr().err


def test_yaml_aliases_that_repeat_a_small_value_still_read(tmp_path: Path) -> None:
    from mssql_cdc.cli.run import read_job

    path = tmp_path / "job.yaml"
    path.write_text("options: &o {backend: emulator}\nstreams:\n  - {options: *o}\n")
    job = read_job(str(path))
    assert job["streams"][0]["options"] == {"backend": "emulator"}


def test_invalid_utf8_is_refused_naming_the_byte_offset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "job.json"
    path.write_bytes(b'{"facts_table": "caf\xe9"}')
    refused_everywhere(path, capsys, "not UTF-8 text (byte 0xe9 at byte offset 20)")


def test_a_byte_order_mark_is_read_as_utf8(tmp_path: Path) -> None:
    from mssql_cdc.cli.run import read_job

    path = tmp_path / "job.json"
    path.write_bytes(b"\xef\xbb\xbf" + job_text(tmp_path).encode())
    assert read_job(str(path))["streams"] == [{"capture_instance": "dbo_orders"}]


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_a_5000_digit_integer_is_refused_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], suffix: str
) -> None:
    path = tmp_path / f"job{suffix}"
    path.write_text('{"max_snapshots": ' + "9" * 5000 + "}")  # JSON is YAML too
    check = refused_everywhere if suffix == ".json" else _run_refused
    check(path, capsys, "the number 99999999999999999999... (5,000 characters) is out of range")


def _run_refused(path: Path, capsys: pytest.CaptureFixture[str], named: str) -> None:
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert named in err
    assert str(path) in err


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('{"max_snapshots": 9223372036854775808}', "out of range"),
        ('{"max_snapshots": NaN}', "NaN is not a JSON number"),
        ('{"max_snapshots": 1e999}', "the number inf is not finite"),
    ],
    ids=["above 64 bits", "NaN", "an overflowing float"],
)
def test_a_number_beyond_64_bits_or_not_finite_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, named: str
) -> None:
    path = tmp_path / "job.json"
    path.write_text(text)
    refused_everywhere(path, capsys, named)


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_100000_nested_brackets_are_refused_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], suffix: str
) -> None:
    path = tmp_path / f"job{suffix}"
    path.write_text("[" * 100_000 + "]" * 100_000)
    if suffix == ".json":
        refused_everywhere(path, capsys, "nested deeper than 64 levels")
    else:
        _run_refused(path, capsys, "not a YAML job file")


def test_nesting_just_past_the_bound_is_refused_by_the_loader(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "job.json"
    path.write_text('{"options": ' + "[" * 70 + "]" * 70 + "}")
    refused_everywhere(path, capsys, "nested deeper than 64 levels")


def test_a_file_larger_than_the_bound_is_refused_unread(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "job.json"
    path.write_text('{"x": "' + "a" * MAX_BYTES + '"}')
    refused_everywhere(path, capsys, "is larger than 4 MiB")


def test_an_error_quoting_a_huge_value_is_cut_in_the_middle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = json.loads(job_text(tmp_path))
    job["facts_table"] = ["x" * 1000] * 1000
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert len(err) < MAX_MESSAGE + 100
    assert "characters left out" in err
    assert err.startswith("mssql-cdc run: facts_table=")
