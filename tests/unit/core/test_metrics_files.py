"""Metrics and event files: names a replan reproduces, whole writes, unwritable never fatal."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest

from mssql_cdc.core.batch_files import read_batch_files
from mssql_cdc.core.metrics_files import (
    chunk_file_name,
    encode_instance,
    event_file_name,
    range_file_name,
    write_json_atomic,
)

S = "0x0000002A000001F00003"


def test_instance_names_percent_encode_everything_outside_the_safe_set() -> None:
    assert encode_instance("dbo_orders-v2.x") == "dbo_orders-v2.x"
    assert encode_instance("a b/c%") == "a%20b%2Fc%25"
    assert encode_instance("café") == "caf%C3%A9"


def test_file_names_follow_the_spec() -> None:
    assert event_file_name("schema_change", "dbo orders", S) == (
        f"event-schema_change-dbo%20orders-{S}.json"
    )
    assert event_file_name("capture_instance_switched", "v2", S) == (
        f"event-capture_instance_switched-v2-{S}.json"
    )
    assert range_file_name(S, S) == f"range-{S}-{S}.json"
    assert chunk_file_name(7) == "chunk-7.json"


def test_a_written_file_reads_back_and_a_rewrite_replaces_it(tmp_path: Path) -> None:
    folder = tmp_path / "new" / "metrics"
    assert write_json_atomic(folder, "range-a.json", {"n": 1})
    assert write_json_atomic(folder, "range-a.json", {"n": 2})
    assert write_json_atomic(folder, "range-b.json", {"rows": 0})
    found = read_batch_files(folder)
    assert found.ranges == ({"n": 2}, {"rows": 0})
    assert [p.name for p in found.paths] == ["range-a.json", "range-b.json"]
    assert sorted(os.listdir(folder)) == ["range-a.json", "range-b.json"]  # no temp left


def test_readers_ignore_hidden_and_temporary_files_and_subdirectories(tmp_path: Path) -> None:
    (tmp_path / ".range-a.json.1a2b.tmp").write_text("{partial")
    (tmp_path / "notes.txt").write_text("not ours")
    (tmp_path / "_backfill").mkdir()
    (tmp_path / "_backfill" / "chunk-0.json").write_text("{}")
    assert write_json_atomic(tmp_path, "range-b.json", {"ok": True})
    found = read_batch_files(tmp_path)
    assert [p.name for p in found.paths] == ["range-b.json"]
    assert (found.ranges, found.unreadable) == (({"ok": True},), ())


def test_a_missing_directory_reads_as_empty(tmp_path: Path) -> None:
    found = read_batch_files(tmp_path / "absent")
    assert (found.ranges, found.events, found.unreadable, found.paths) == ((), (), (), ())


def test_a_foreign_corrupt_file_is_named_when_read(tmp_path: Path) -> None:
    (tmp_path / "range-x.json").write_text("{not json")
    [problem] = read_batch_files(tmp_path).unreadable
    assert f"{tmp_path / 'range-x.json'} is not valid JSON" in problem
    (tmp_path / "range-x.json").write_text("[1, 2]")
    found = read_batch_files(tmp_path)
    assert found.unreadable == (f"metrics file {tmp_path / 'range-x.json'} holds no JSON object",)
    assert (found.ranges, [p.name for p in found.paths]) == ((), ["range-x.json"])


def test_a_file_that_cannot_be_written_is_a_warning_not_an_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "metrics"
    blocker.write_text("a file where the directory should be")
    with caplog.at_level(logging.WARNING, logger="mssql_cdc.metrics"):
        assert write_json_atomic(blocker, "range-a.json", {"rows": 1}) is False
    [record] = caplog.records
    assert str(blocker / "range-a.json") in record.getMessage()
    assert "could not be written and is skipped" in record.getMessage()


def test_a_read_only_directory_is_a_warning_even_as_root(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        with caplog.at_level(logging.WARNING, logger="mssql_cdc.metrics"):
            written = write_json_atomic(folder, "range-a.json", {"rows": 1})
        if os.geteuid() != 0:
            assert written is False
            assert "could not be written" in caplog.text
        else:  # root ignores the mode bits; the write must then simply succeed
            assert written is True
    finally:
        folder.chmod(stat.S_IRWXU)


def test_a_value_json_cannot_hold_is_a_warning_too(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="mssql_cdc.metrics"):
        assert write_json_atomic(tmp_path, "range-a.json", {"x": object()}) is False
    assert os.listdir(tmp_path) == []
