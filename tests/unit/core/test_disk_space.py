"""The free-space check of the folders a run writes, on a real full disk (a tmpfs filled to its
last byte, tests/support/full_disk.py): the kernel's ENOSPC is the oracle, not the check."""

from __future__ import annotations

import errno
import os
import pickle
from pathlib import Path

import pytest

from mssql_cdc.core import (
    MIN_FREE_BYTES,
    GenerationState,
    check_space,
    check_writable,
    free_bytes,
)
from mssql_cdc.core.checkpoint import read_state, write_state
from mssql_cdc.core.metrics_files import write_json_atomic
from mssql_cdc.errors import ConfigError, DiskFullError
from tests.support.full_disk import small_disk


def test_a_filled_disk_refuses_a_byte_and_a_freed_one_takes_it_again(tmp_path: Path) -> None:
    with small_disk(tmp_path / "disk", size_mb=1) as disk:
        assert disk.fill() > 0
        with pytest.raises(OSError, match="No space left on device") as full:
            (disk.path / "one-byte").write_bytes(b"x")
        assert full.value.errno == errno.ENOSPC
        assert free_bytes(disk.path) == 0
        disk.free()
        (disk.path / "one-byte").write_bytes(b"x")
        assert free_bytes(disk.path) is not None
        assert free_bytes(disk.path) >= 512 * 1024  # type: ignore[operator]


def test_the_check_names_the_folder_its_role_and_what_to_do_on_a_full_disk(
    tmp_path: Path,
) -> None:
    with small_disk(tmp_path / "disk", size_mb=1) as disk:
        check_space(disk.path / "ckpt" / "not-yet", what="the checkpoint")  # room: no error
        disk.fill()
        with pytest.raises(DiskFullError) as refused:
            check_space(disk.path / "ckpt" / "not-yet", what="the checkpoint")
    text = str(refused.value)
    assert text.startswith(f"no space left on device for the checkpoint at {disk.path}/ckpt/")
    assert f"0 bytes free, under the {MIN_FREE_BYTES:,} a run needs" in text
    assert "Free space on that file system" in text
    assert "run again" in text
    again = pickle.loads(pickle.dumps(refused.value))  # executors' errors travel pickled
    assert (str(again), again.path, again.free_bytes) == (text, str(disk.path / "ckpt/not-yet"), 0)


def test_the_state_file_on_a_full_disk_is_an_error_naming_it_and_the_old_state_stays(
    tmp_path: Path,
) -> None:
    with small_disk(tmp_path / "disk", size_mb=1) as disk:
        checkpoint = disk.path / "ckpt"
        checkpoint.mkdir()
        old = GenerationState(generation=0, failed_at="2026-01-01T00:00:00+00:00")
        write_state(checkpoint, old)
        disk.fill()
        new = GenerationState(generation=0, failed_at="2026-01-02T00:00:00+00:00")
        with pytest.raises(OSError, match="No space left on device") as failed:
            write_state(checkpoint, new)
        assert str(checkpoint / "_mssql_cdc_generation.json") in str(failed.value)
        assert "that it has space" in str(failed.value)
        assert read_state(checkpoint) == old
        assert [p.name for p in checkpoint.iterdir()] == ["_mssql_cdc_generation.json"]


def test_a_metrics_file_on_a_full_disk_is_skipped_with_a_warning_naming_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with small_disk(tmp_path / "disk", size_mb=1) as disk:
        disk.fill()
        assert not write_json_atomic(disk.path / "metrics", "range-1-2.json", {"rows": 1})
        assert [p.name for p in (disk.path / "metrics").iterdir()] == []  # no temporary left
    [warning] = caplog.records
    assert str(disk.path / "metrics" / "range-1-2.json") in warning.getMessage()
    assert "No space left on device" in warning.getMessage()


def test_a_read_only_folder_is_refused_naming_it_and_what_to_do(tmp_path: Path) -> None:
    with small_disk(tmp_path / "disk", size_mb=1) as disk:
        (disk.path / "ckpt").mkdir()
        check_writable(disk.path / "ckpt" / "g", what="the checkpoint")  # writable: no error
        disk.read_only()
        with pytest.raises(OSError, match="Read-only file system"):
            (disk.path / "ckpt" / "probe").write_bytes(b"x")  # the kernel's oracle
        with pytest.raises(ConfigError) as refused:
            check_writable(disk.path / "ckpt" / "g", what="the checkpoint")
        disk.writable()
        check_writable(disk.path / "ckpt" / "g", what="the checkpoint")
    assert str(refused.value) == (
        f"the checkpoint at {disk.path}/ckpt/g cannot be written: {disk.path}/ckpt is on a "
        "read-only file system. Nothing was started or written. Mount it read-write (or give "
        "the stream a folder it may write) and run again: the run resumes after the last "
        "committed batch."
    )


def test_a_folder_without_write_permission_is_refused_naming_the_user(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "ckpt"
    folder.mkdir()
    monkeypatch.setattr(os, "access", lambda _path, _mode: False)  # root passes every mode bit
    with pytest.raises(ConfigError) as refused:
        check_writable(folder, what="the checkpoint")
    assert str(refused.value).startswith(
        f"the checkpoint at {folder} cannot be written: this process (uid {os.geteuid()}) may "
        f"not write in {folder}: permission denied. Nothing was started or written. Give the "
        "user running Spark's driver write permission on that folder"
    )
