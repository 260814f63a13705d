"""A first checkpoint write a killed driver left half done is removed before a query starts.

The file names are those Hadoop's atomic create leaves in a Spark 4 checkpoint when the driver
is killed before the rename (seen in a chaos run: `offsets/.0.<uuid>.tmp` and its checksum
`offsets/..0.<uuid>.tmp.crc`), after which Spark refuses batch 0 with
STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY.
"""

from __future__ import annotations

from pathlib import Path

from mssql_cdc.core import drop_abandoned_first_writes

UUID = "840bc75f-0647-4039-a95d-e96c56fae8c7"


def checkpoint_with(tmp_path: Path, offsets: list[str], commits: list[str]) -> Path:
    root = tmp_path / "cp"
    for folder, names in (("offsets", offsets), ("commits", commits)):
        (root / folder).mkdir(parents=True)
        for name in names:
            (root / folder / name).write_text("")
    (root / "metadata").write_text('{"id":"q"}')
    return root


def test_the_temporary_files_of_an_unfinished_first_write_are_removed(tmp_path: Path) -> None:
    root = checkpoint_with(tmp_path, [f".0.{UUID}.tmp", f"..0.{UUID}.tmp.crc"], [])

    removed = drop_abandoned_first_writes(root)

    assert sorted(Path(p).name for p in removed) == [f"..0.{UUID}.tmp.crc", f".0.{UUID}.tmp"]
    assert list((root / "offsets").iterdir()) == []
    assert (root / "metadata").exists()


def test_a_log_that_holds_a_batch_and_other_files_are_left_alone(tmp_path: Path) -> None:
    offsets = ["0", ".0.crc", f".1.{UUID}.tmp"]  # batch 0 written: Spark reads on past it
    commits = ["notes.txt", f".0.{UUID}.tmp"]  # a file that is not Spark's is never touched
    root = checkpoint_with(tmp_path, offsets, commits)

    removed = drop_abandoned_first_writes(root)

    assert [Path(p).name for p in removed] == [f".0.{UUID}.tmp"]
    assert sorted(p.name for p in (root / "offsets").iterdir()) == sorted(offsets)
    assert [p.name for p in (root / "commits").iterdir()] == ["notes.txt"]


def test_a_checkpoint_spark_has_not_started_on_is_left_as_it_is(tmp_path: Path) -> None:
    assert drop_abandoned_first_writes(tmp_path / "missing") == []
