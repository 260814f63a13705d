"""The checkpoint toolkit through the binding: Spark's offset log, the state file, the paths."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mssql_cdc.core import checkpoint
from mssql_cdc.core.checkpoint import GenerationState, StreamOffset
from mssql_cdc.errors import ConfigError, StateFileError

META = '{"batchWatermarkMs":0,"batchTimestampMs":1795950779067,"conf":{}}'


def source_line(n: int) -> str:
    # json.dumps is how the source writes its offset: the oracle for line 3.
    return json.dumps({"lsn": f"0x{n:020X}", "commit_ts": "2026-09-28T14:03:12.117"})


def spark_batch(ckpt: Path, n: int, *, committed: bool, version: str = "v1") -> None:
    """Write batch n as Spark 4.2 does: no trailing newline, hidden .crc files beside."""
    (ckpt / "offsets").mkdir(parents=True, exist_ok=True)
    (ckpt / "commits").mkdir(parents=True, exist_ok=True)
    (ckpt / "offsets" / str(n)).write_text(f"{version}\n{META}\n{source_line(n)}")
    (ckpt / "offsets" / f".{n}.crc").write_bytes(b"\x00crc")
    if committed:
        (ckpt / "commits" / str(n)).write_text('v1\n{"nextBatchWatermarkMs":0}')
        (ckpt / "commits" / f".{n}.crc").write_bytes(b"\x00crc")


def test_a_checkpoint_without_commits_has_no_last_offset(tmp_path: Path) -> None:
    assert checkpoint.last_processed_offset(tmp_path) is None
    spark_batch(tmp_path, 0, committed=False)
    assert checkpoint.last_processed_offset(tmp_path) is None


def test_the_last_offset_is_line_three_of_the_highest_committed_batch(tmp_path: Path) -> None:
    for n in range(12):
        spark_batch(tmp_path, n, committed=True)
    last = checkpoint.last_processed_offset(tmp_path)
    assert last is not None
    assert last.batch_id == 11
    assert last.source_json == source_line(11)
    assert last.file == str(tmp_path / "offsets" / "11")
    assert last.offset() == StreamOffset(f"0x{11:020X}", "2026-09-28T14:03:12.117")


def test_an_offset_file_without_a_commit_is_a_replay_not_the_last_offset(tmp_path: Path) -> None:
    spark_batch(tmp_path, 0, committed=True)
    spark_batch(tmp_path, 1, committed=False)  # a crash after the offset, before the commit
    last = checkpoint.last_processed_offset(tmp_path)
    assert last is not None
    assert (last.batch_id, last.source_json) == (0, source_line(0))


def test_temporary_and_hidden_names_in_commits_are_ignored(tmp_path: Path) -> None:
    spark_batch(tmp_path, 2, committed=True)
    for name in ("7.tmp", ".7.0b3f.tmp", ".7.crc", "7~", "backup-7"):
        (tmp_path / "commits" / name).write_text("v1\n{}")
    last = checkpoint.last_processed_offset(tmp_path)
    assert last is not None
    assert last.batch_id == 2


@pytest.mark.parametrize("version", ["v2", "v10"])
def test_another_offset_log_version_is_a_value_error_naming_it_and_the_file(
    tmp_path: Path, version: str
) -> None:
    spark_batch(tmp_path, 0, committed=True, version=version)
    with pytest.raises(ValueError, match=f"offset log version '{version}'") as info:
        checkpoint.last_processed_offset(tmp_path)
    assert str(tmp_path / "offsets" / "0") in str(info.value)
    assert isinstance(info.value, ConfigError)


@pytest.mark.parametrize("body", ["", "v1\n", "v1\n{}", "v1\n{}\n-"])
def test_a_truncated_offsets_file_of_a_committed_batch_is_a_corrupt_checkpoint(
    tmp_path: Path, body: str
) -> None:
    spark_batch(tmp_path, 0, committed=True)
    (tmp_path / "offsets" / "0").write_text(body)
    with pytest.raises(StateFileError, match="corrupt checkpoint"):
        checkpoint.last_processed_offset(tmp_path)


def test_a_line_three_of_another_source_is_refused_when_read_as_an_offset(tmp_path: Path) -> None:
    spark_batch(tmp_path, 0, committed=True)
    (tmp_path / "offsets" / "0").write_text(f"v1\n{META}\n0")  # the rate source writes "0"
    last = checkpoint.last_processed_offset(tmp_path)
    assert last is not None
    assert last.source_json == "0"
    with pytest.raises(StateFileError, match="another source"):
        last.offset()


def test_has_metadata_tells_whether_spark_started_on_the_folder(tmp_path: Path) -> None:
    assert not checkpoint.has_metadata(tmp_path)
    (tmp_path / "metadata").write_text('{"id":"635daf2f"}')
    assert checkpoint.has_metadata(tmp_path)


GEN2 = GenerationState(
    generation=2,
    snapshot=StreamOffset("0x00000031000002A80004", "2026-11-02T08:15:04.250"),
    at="2026-11-09T06:00:12+00:00",
)


def test_no_state_file_is_generation_zero(tmp_path: Path) -> None:
    assert checkpoint.read_state(tmp_path) is None


def test_the_state_file_holds_the_documented_json_and_reads_back(tmp_path: Path) -> None:
    checkpoint.write_state(tmp_path, GEN2)
    on_disk = json.loads((tmp_path / "_mssql_cdc_generation.json").read_text())
    assert on_disk == {
        "generation": 2,
        "snapshot_lsn": "0x00000031000002A80004",
        "commit_ts": "2026-11-02T08:15:04.250",
        "at": "2026-11-09T06:00:12+00:00",
    }
    assert checkpoint.read_state(tmp_path) == GEN2


def test_an_open_recovery_in_generation_zero_round_trips(tmp_path: Path) -> None:
    state = GenerationState(
        recovering=StreamOffset("0x0000002A000001F00003", None),
        failed_at="2026-10-01T02:00:00+00:00",
    )
    checkpoint.write_state(tmp_path / "fresh", state)
    on_disk = json.loads((tmp_path / "fresh" / "_mssql_cdc_generation.json").read_text())
    assert on_disk == {
        "generation": 0,
        "recovering": {"lsn": "0x0000002A000001F00003", "commit_ts": ""},
        "failed_at": "2026-10-01T02:00:00+00:00",
    }
    assert checkpoint.read_state(tmp_path / "fresh") == state


def test_a_leftover_temporary_file_of_an_interrupted_write_is_ignored(tmp_path: Path) -> None:
    checkpoint.write_state(tmp_path, GEN2)
    (tmp_path / "_mssql_cdc_generation.json.00112233aabbccdd.tmp").write_text('{"generati')
    assert checkpoint.read_state(tmp_path) == GEN2
    checkpoint.write_state(tmp_path, GenerationState())
    assert checkpoint.read_state(tmp_path) == GenerationState()


def test_a_write_leaves_only_the_state_file(tmp_path: Path) -> None:
    checkpoint.write_state(tmp_path, GenerationState())
    checkpoint.write_state(tmp_path, GEN2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["_mssql_cdc_generation.json"]


@pytest.mark.parametrize(
    ("body", "defect"),
    [
        ('{"generation": 1, "snapshot_lsn": "0x1", "co', "not valid JSON"),  # truncated
        ("", "not valid JSON"),
        ('{"generation": "1"}', "not a non-negative integer"),
        ('{"generation": -1}', "not a non-negative integer"),
        ('{"generation": 1}', 'no "snapshot_lsn"'),
        (
            '{"generation": 1, "snapshot_lsn": "0x00000031000002A80004", "commit_ts": "", '
            '"at": "soon"}',
            "UTC time",
        ),
        ("[]", "not a JSON object"),
    ],
)
def test_a_corrupt_state_file_is_an_error_never_generation_zero(
    tmp_path: Path, body: str, defect: str
) -> None:
    (tmp_path / "_mssql_cdc_generation.json").write_text(body)
    with pytest.raises(StateFileError) as info:
        checkpoint.read_state(tmp_path)
    message = str(info.value)
    assert str(tmp_path / "_mssql_cdc_generation.json") in message
    assert defect in message
    assert "restore the file or correct it by hand" in message
    assert isinstance(info.value, ValueError)


def test_an_unknown_key_in_the_state_file_is_ignored_and_not_written_back(
    tmp_path: Path,
) -> None:
    state_file = tmp_path / "_mssql_cdc_generation.json"
    state_file.write_text('{"generation": 0, "owner": "team-a"}')
    state = checkpoint.read_state(tmp_path)
    assert state == GenerationState()
    assert state is not None
    checkpoint.write_state(tmp_path, state)
    assert json.loads(state_file.read_text()) == {"generation": 0}


@pytest.mark.parametrize("lsn", ["0x12", "00000031000002A80004", "0x00000031000002A8000G"])
def test_a_state_lsn_not_written_in_full_is_refused_as_the_message_says(
    tmp_path: Path, lsn: str
) -> None:
    (tmp_path / "_mssql_cdc_generation.json").write_text(
        json.dumps(
            {
                "generation": 1,
                "snapshot_lsn": lsn,
                "commit_ts": "",
                "at": "2026-11-09T06:00:12+00:00",
            }
        )
    )
    with pytest.raises(StateFileError, match=r"is not an LSN \(0x \+ 20 hex digits\)"):
        checkpoint.read_state(tmp_path)


def test_a_junk_offset_line_is_quoted_in_part_with_its_length(tmp_path: Path) -> None:
    spark_batch(tmp_path, 0, committed=True)
    junk = '{"lsn": "' + "z" * 5_000_000 + '", "commit_ts": ""}'
    (tmp_path / "offsets" / "0").write_text(f"v1\n{META}\n{junk}")
    last = checkpoint.last_processed_offset(tmp_path)
    assert last is not None
    with pytest.raises(StateFileError) as info:
        last.offset()
    message = str(info.value)
    assert len(message) < 600
    assert f"{junk[:80]}...({len(junk)} bytes)" in message
    assert str(tmp_path / "offsets" / "0") in message


def test_a_state_change_is_written_only_over_the_state_the_run_read(tmp_path: Path) -> None:
    recovering = GenerationState(recovering=StreamOffset("0x0000002A000001F00003", None))
    assert checkpoint.replace_state(tmp_path, GenerationState(), recovering)  # no file: gen 0
    assert checkpoint.replace_state(tmp_path, recovering, GEN2)
    assert not checkpoint.replace_state(tmp_path, GenerationState(), recovering)  # moved on
    assert not checkpoint.replace_state(tmp_path, recovering, GenerationState())
    assert checkpoint.read_state(tmp_path) == GEN2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["_mssql_cdc_generation.json"]


def test_an_invalid_state_is_refused_and_the_old_file_kept(tmp_path: Path) -> None:
    checkpoint.write_state(tmp_path, GEN2)
    before = (tmp_path / "_mssql_cdc_generation.json").read_bytes()
    with pytest.raises(ConfigError, match="needs snapshot_lsn"):
        checkpoint.write_state(tmp_path, GenerationState(generation=3))
    assert (tmp_path / "_mssql_cdc_generation.json").read_bytes() == before


@pytest.mark.parametrize(
    "path",
    ["dbfs:/mnt/ckpt", "abfss://c@a.dfs.core.windows.net/ckpt", "s3://b/ckpt", "file:/tmp/c"],
)
def test_a_uri_checkpoint_is_refused_naming_it_and_saying_what_to_use(path: str) -> None:
    with pytest.raises(ConfigError) as info:
        checkpoint.read_state(path)
    assert path in str(info.value)
    assert "/Volumes/" in str(info.value)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("path", ["/dbfs", "/dbfs/mnt/ckpt"])
def test_a_dbfs_fuse_checkpoint_is_refused_because_spark_reads_it_elsewhere(path: str) -> None:
    with pytest.raises(ConfigError, match="dbfs:/dbfs/"):
        checkpoint.last_processed_offset(path)


def test_a_relative_checkpoint_is_made_absolute_and_a_drive_letter_is_no_scheme(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert checkpoint.check_checkpoint_path("ckpt/orders") == str(tmp_path / "ckpt" / "orders")
    assert not checkpoint.is_uri("C:/ckpt")
    assert checkpoint.is_uri("dbfs:/ckpt")
    assert checkpoint.check_checkpoint_path("/dbfsx/c") == "/dbfsx/c"


def test_the_live_paths_follow_the_state(tmp_path: Path) -> None:
    root = str(tmp_path / "ckpt")
    zero = checkpoint.live_paths(root, "orders-v1", None)
    assert (zero.generation, zero.checkpoint, zero.app_id) == (0, root, "orders-v1")
    assert zero.metrics_path == root + "/_mssql_cdc_metrics"
    two = checkpoint.live_paths(root, "orders-v1", GEN2)
    assert (two.checkpoint, two.app_id) == (root + "/_generations/2", "orders-v1.g2")
    assert two.metrics_path == root + "/_generations/2/_mssql_cdc_metrics"
    assert two.state_file == root + "/_mssql_cdc_generation.json"
    explicit = checkpoint.live_paths(root, "orders-v1", GEN2, metrics_path="/m")
    assert explicit.metrics_path == "/m/orders-v1.g2"


@pytest.mark.parametrize(
    ("row_app_id", "generation", "member"),
    [
        ("orders-v1", 0, True),
        ("orders-v1.g12", 12, True),
        ("orders-v10", 0, False),
        ("orders-v1.g", 0, False),
        ("orders-v1x.g1", 1, False),
        ("orders-v1.g12", 0, False),
    ],
)
def test_family_membership_is_equality_never_a_pattern(
    row_app_id: str, generation: int, member: bool
) -> None:
    assert checkpoint.in_family(row_app_id, "orders-v1", generation) is member


def _make_odd_state_file(root: Path, kind: str) -> Path:
    """Put a folder, a named pipe or a socket where the state file goes."""
    import os
    import socket

    file = root / checkpoint.STATE_FILE_NAME
    if kind == "a folder":
        file.mkdir()
        (file / "kept.txt").write_text("a user's file")
    elif kind == "a named pipe (FIFO)":
        os.mkfifo(file)
    else:
        sock = socket.socket(socket.AF_UNIX)
        here = os.getcwd()
        os.chdir(root)  # a socket's path is limited to about 100 bytes
        try:
            sock.bind(checkpoint.STATE_FILE_NAME)
        finally:
            os.chdir(here)
        sock.close()
    return file


@pytest.mark.parametrize("kind", ["a folder", "a named pipe (FIFO)", "a socket"])
def test_a_state_file_that_is_no_regular_file_is_refused_naming_it_and_its_kind(
    tmp_path: Path, kind: str
) -> None:
    file = _make_odd_state_file(tmp_path, kind)
    with pytest.raises(StateFileError) as caught:
        checkpoint.read_state(tmp_path)  # never opened: a FIFO would block the read
    assert f"the generation state file {file} is {kind}, not a regular file" in str(caught.value)
    assert "Move it out of the checkpoint folder" in str(caught.value)
    with pytest.raises(StateFileError):
        checkpoint.replace_state(tmp_path, GenerationState(), GenerationState(generation=0))
    with pytest.raises(StateFileError):
        checkpoint.write_state(tmp_path, GenerationState())
    if kind == "a folder":
        assert (file / "kept.txt").read_text() == "a user's file"


def test_max_generation_is_the_highest_generation_the_state_file_reads_back(
    tmp_path: Path,
) -> None:
    from dataclasses import replace

    checkpoint.write_state(tmp_path / "a", replace(GEN2, generation=checkpoint.MAX_GENERATION))
    assert checkpoint.read_state(tmp_path / "a") == replace(
        GEN2, generation=checkpoint.MAX_GENERATION
    )
    beyond = tmp_path / "b"
    beyond.mkdir()
    (beyond / checkpoint.STATE_FILE_NAME).write_text(
        json.dumps({"generation": checkpoint.MAX_GENERATION + 1})
    )
    with pytest.raises(StateFileError, match='"generation" is'):
        checkpoint.read_state(beyond)
