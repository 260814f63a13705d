"""`mssql-cdc status`: the files of a stream, shown without Spark or SQL Server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mssql_cdc.cli import main


def lsn(n: int) -> str:
    return f"0x{n:020X}"


def spark_batch(ckpt: Path, n: int, *, committed: bool, first_line: str = "v1") -> None:
    (ckpt / "offsets").mkdir(parents=True, exist_ok=True)
    (ckpt / "commits").mkdir(parents=True, exist_ok=True)
    (ckpt / "metadata").write_text('{"id":"x"}')
    line3 = json.dumps({"lsn": lsn(n), "commit_ts": "2026-09-28T14:03:12.117"})
    (ckpt / "offsets" / str(n)).write_text(f"{first_line}\n{{}}\n{line3}")
    if committed:
        (ckpt / "commits" / str(n)).write_text("v1\n{}")


def status(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["status", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def as_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code, out, err = status(capsys, *argv, "--json")
    assert (code, err) == (0, "")
    result: dict[str, Any] = json.loads(out)
    return result


def test_a_stream_without_state_is_generation_zero_at_its_last_commit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spark_batch(tmp_path, 0, committed=True)
    spark_batch(tmp_path, 1, committed=True)
    spark_batch(tmp_path, 2, committed=False)
    s = as_json(capsys, str(tmp_path), "--app-id", "orders-v1")
    assert s["has_state_file"] is False
    assert s["generation"] == 0
    assert s["live_checkpoint"] == str(tmp_path)
    assert s["sink_app_id"] == "orders-v1"
    assert s["last_commit"]["batch_id"] == 1
    assert s["last_commit"]["offset"] == {"lsn": lsn(1), "commit_ts": "2026-09-28T14:03:12.117"}
    assert s["recovering"] is None
    code, out, _ = status(capsys, str(tmp_path))
    assert code == 0
    assert "generation 0, no state file" in out
    assert f"batch 1 at {lsn(1)} (2026-09-28T14:03:12.117)" in out
    assert "pending         nothing" in out


def test_a_later_generation_reads_its_own_checkpoint_and_shows_a_pending_recovery(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = {
        "generation": 2,
        "snapshot_lsn": lsn(40),
        "commit_ts": "2026-11-02T08:15:04.250",
        "at": "2026-11-09T06:00:12+00:00",
        "recovering": {"lsn": lsn(45), "commit_ts": ""},
        "failed_at": "2026-11-10T00:00:00+00:00",
    }
    (tmp_path / "_mssql_cdc_generation.json").write_text(json.dumps(state))
    spark_batch(tmp_path, 9, committed=True)  # generation 0's batches: not the live ones
    live = tmp_path / "_generations" / "2"
    spark_batch(live, 0, committed=True)
    s = as_json(capsys, str(tmp_path), "--app-id", "orders-v1")
    assert s["generation"] == 2
    assert s["live_checkpoint"] == str(live)
    assert s["sink_app_id"] == "orders-v1.g2"
    assert s["last_commit"]["batch_id"] == 0
    assert s["recovering"] == {"lsn": lsn(45), "commit_ts": None}
    assert s["failed_at"] == "2026-11-10T00:00:00+00:00"
    code, out, _ = status(capsys, str(tmp_path))
    assert code == 0
    assert "<app_id>.g2 (pass --app-id to name it)" in out
    assert f"recovering from {lsn(45)} (commit time unknown)" in out
    assert "a failed re-snapshot at 2026-11-10T00:00:00+00:00" in out
    assert "on_data_loss='resnapshot'" in out


def test_a_fresh_checkpoint_has_no_commit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "new").mkdir()
    s = as_json(capsys, str(tmp_path / "new"))
    assert s["last_commit"] is None
    assert s["spark_started"] is False
    assert s["sink_app_id"] is None


@pytest.mark.parametrize(
    ("setup", "expected"),
    [
        ("state", "restore the file or correct it by hand"),
        ("version", "offset log version 'v2'"),
        ("truncated", "corrupt checkpoint"),
    ],
)
def test_an_invalid_state_file_or_offset_log_exits_two_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], setup: str, expected: str
) -> None:
    if setup == "state":
        (tmp_path / "_mssql_cdc_generation.json").write_text('{"generation": "1"}')
    elif setup == "version":
        spark_batch(tmp_path, 0, committed=True, first_line="v2")
    else:
        spark_batch(tmp_path, 0, committed=True)
        (tmp_path / "offsets" / "0").write_text("v1\n")
    code, out, err = status(capsys, str(tmp_path))
    assert (code, out) == (2, "")
    assert err.startswith("mssql-cdc status: ")
    assert expected in err


def test_a_uri_checkpoint_exits_two_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = status(capsys, "abfss://c@a.dfs.core.windows.net/ckpt")
    assert code == 2
    assert "abfss://c@a.dfs.core.windows.net/ckpt must be a local path or a Volume" in err


@pytest.mark.parametrize("kind", ["missing", "a file"])
def test_a_checkpoint_that_is_not_a_folder_exits_two_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    path = tmp_path / "nonexistent"
    if kind == "a file":
        path.write_text("not a checkpoint")
    code, out, err = status(capsys, str(path))
    assert (code, out) == (2, "")
    reason = "does not exist" if kind == "missing" else "is not a folder"
    assert err == (
        f"mssql-cdc status: checkpoint {path} {reason}; pass the checkpoint folder given to "
        "to_delta (it exists once the stream has run)\n"
    )
    assert not path.is_dir()  # status looked, and created nothing


@pytest.mark.parametrize(
    ("verb", "codes"),
    [
        ("status", ["0 the files are valid", "2 a missing or refused checkpoint folder"]),
        (
            "plan",
            ["0 action none", "10 resnapshot", "11 blocked", "2 an invalid argument", "1 any"],
        ),
    ],
)
def test_the_help_of_status_and_plan_lists_their_exit_codes(
    capsys: pytest.CaptureFixture[str], verb: str, codes: list[str]
) -> None:
    with pytest.raises(SystemExit) as done:
        main([verb, "--help"])
    assert done.value.code == 0
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps the epilog
    assert "exit codes:" in text
    for code in codes:
        assert code in text


def test_a_state_file_that_is_a_named_pipe_exits_two_naming_it_without_blocking(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import os

    os.mkfifo(tmp_path / "_mssql_cdc_generation.json")
    code, out, err = status(capsys, str(tmp_path))
    assert (code, out) == (2, "")
    assert "is a named pipe (FIFO), not a regular file" in err
    assert "Is a directory" not in err


def test_a_folder_that_is_no_checkpoint_exits_two_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "notes.txt").write_text("someone's files")
    code, out, err = status(capsys, str(tmp_path))
    assert (code, out) == (2, "")
    assert f"checkpoint {tmp_path} is no stream checkpoint" in err
    code, out, err = status(capsys, "/")
    assert (code, out) == (2, "")
    assert "checkpoint / is no stream checkpoint" in err


def test_a_generation_folder_exits_two_naming_the_streams_own_checkpoint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    live = tmp_path / "_generations" / "1"
    spark_batch(live, 0, committed=True)
    code, out, err = status(capsys, str(live))
    assert (code, out) == (2, "")
    assert f"generation 1 inside the stream's checkpoint {tmp_path}" in err
    assert f"pass {tmp_path}, the folder given to to_delta" in err


def test_an_app_id_of_another_stream_exits_two_naming_the_checkpoints_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spark_batch(tmp_path, 0, committed=True)
    cache = {"format": 1, "app_id": "orders-v1", "table_id": "t", "location": "/f",
             "version": 1, "commit_id": "c", "rows": []}  # fmt: skip
    (tmp_path / "_mssql_cdc_family_cache.json").write_text(json.dumps(cache))
    code, out, err = status(capsys, str(tmp_path), "--app-id", "orders-v2")
    assert (code, out) == (2, "")
    assert "--app-id orders-v2 is not the stream of checkpoint" in err
    assert "pass --app-id orders-v1" in err
    assert status(capsys, str(tmp_path), "--app-id", "orders-v1")[0] == 0
