"""`mssql-cdc gc`: earlier generations removed, the live one and everything else kept, bad input
refused before anything is removed. Checkpoints laid out as Spark and the library leave them."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from mssql_cdc.cli import main
from mssql_cdc.core import checkpoint
from mssql_cdc.core.checkpoint import GenerationState, StreamOffset
from mssql_cdc.core.generation_gc import collect_garbage


def spark_files(folder: Path, batches: int = 2) -> None:
    """What a Spark streaming query leaves in its checkpoint, with a metrics folder."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "metadata").write_text('{"id":"q"}')
    (folder / ".metadata.crc").write_bytes(b"crc")
    for sub in ("offsets", "commits"):
        (folder / sub).mkdir()
        for n in range(batches):
            (folder / sub / str(n)).write_text("v1\n{}\n{}")
    (folder / "sources" / "0").mkdir(parents=True)
    (folder / "_mssql_cdc_metrics").mkdir()
    (folder / "_mssql_cdc_metrics" / "range-a-b.json").write_text("{}")


def stream_at(root: Path, live: int) -> Path:
    """A checkpoint whose generations 0..live were all run."""
    spark_files(root)
    (root / "_mssql_cdc_family_cache.json").write_text("{}")
    for g in range(1, live + 1):
        spark_files(root / "_generations" / str(g))
    if live > 0:
        checkpoint.write_state(
            root,
            GenerationState(
                generation=live,
                snapshot=StreamOffset("0x00000031000002A80004", "2026-11-02T08:15:04.250"),
                at="2026-11-09T06:00:12+00:00",
            ),
        )
    return root


def tree(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


def gc(*argv: str) -> int:
    try:
        return main(["gc", *argv])
    except SystemExit as usage:  # argparse's own refusals
        return int(usage.code or 0)


def test_the_earlier_generations_go_and_the_live_one_and_the_streams_files_stay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = stream_at(tmp_path / "ckpt", 2)
    (root / "notes.txt").write_text("mine")
    live_before = tree(root / "_generations" / "2")
    state_before = (root / "_mssql_cdc_generation.json").read_bytes()
    assert gc(str(root)) == 0
    assert sorted(p.name for p in root.iterdir()) == [
        "_generations", "_mssql_cdc_family_cache.json", "_mssql_cdc_generation.json", "notes.txt",
    ]  # fmt: skip
    assert [p.name for p in (root / "_generations").iterdir()] == ["2"]
    assert tree(root / "_generations" / "2") == live_before
    assert (root / "_mssql_cdc_generation.json").read_bytes() == state_before
    out = capsys.readouterr().out
    assert "generation 2 is live" in out
    assert f"removed generation 1: {root}/_generations/1 (" in out
    assert f"removed generation 0: {root}/offsets (2 files" in out
    assert "kept generations: 2" in out
    assert gc(str(root)) == 0  # again: nothing left to remove
    assert "nothing to remove" in capsys.readouterr().out


def test_a_dry_run_removes_nothing_and_keep_counts_the_live_generation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = stream_at(tmp_path / "ckpt", 3)
    before = tree(root)
    assert gc(str(root), "--dry-run", "--json") == 0
    report = json.loads(capsys.readouterr().out)
    assert tree(root) == before
    assert report["dry_run"] is True
    assert report["live_generation"] == 3
    assert report["kept"] == [3]
    assert {r["generation"] for r in report["removed"]} == {0, 1, 2}
    assert gc(str(root), "--keep", "2") == 0
    assert sorted(p.name for p in (root / "_generations").iterdir()) == ["2", "3"]
    assert not (root / "offsets").exists()
    assert gc(str(root), "--keep", "5", "--json") == 0
    assert sorted(p.name for p in (root / "_generations").iterdir()) == ["2", "3"]


def test_generation_zero_live_or_no_state_file_removes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = stream_at(tmp_path / "ckpt", 0)
    before = tree(root)
    assert gc(str(root)) == 0
    assert tree(root) == before
    assert "generation 0 is live" in capsys.readouterr().out


def test_links_strangers_and_newer_generations_are_left_and_nothing_outside_is_touched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    precious = tmp_path / "precious"
    (precious / "offsets").mkdir(parents=True)
    (precious / "offsets" / "keep.me").write_text("x")
    root = stream_at(tmp_path / "ckpt", 2)
    (root / "_generations" / "1" / "offsets" / "link").symlink_to(precious)
    (root / "_generations" / "7").symlink_to(precious)
    (root / "_generations" / "backup").mkdir()
    (root / "_generations" / "3").mkdir()  # a recovery starting generation 3 right now
    (root / "state").symlink_to(precious)
    assert gc(str(root)) == 0
    assert tree(precious) == ["offsets", "offsets/keep.me"]
    assert sorted(p.name for p in (root / "_generations").iterdir()) == ["2", "3", "7", "backup"]
    assert (root / "state").is_symlink()
    out = capsys.readouterr().out
    assert "left in place: " + str(root / "_generations" / "3") + " (newer than the live" in out
    assert "a symbolic link" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--keep", "0"], "outside 1"),
        (["--keep", "many"], "'many' is not a whole number"),
        (["--keep", "99999999999999999999"], "outside 1"),
        (["--metrics-path", "{metrics}"], "needs app_id"),
        (["--metrics-path", "{metrics}", "--app-id", "../x"], "app_id"),
        (["--metrics-path", "{root}/missing", "--app-id", "a"], "is not a folder"),
        (["--kep", "2"], "did you mean --keep"),
    ],
)
def test_bad_arguments_are_refused_and_nothing_is_removed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    root = stream_at(tmp_path / "ckpt", 2)
    metrics = tmp_path / "metrics"
    metrics.mkdir()
    before = tree(root)
    argv = [a.format(metrics=metrics, root=tmp_path) for a in argv]
    assert gc(str(root), *argv) == 2
    assert message in capsys.readouterr().err
    assert tree(root) == before


def test_a_missing_file_uri_or_broken_state_is_refused_with_nothing_removed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert gc(str(tmp_path / "nowhere")) == 2
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "file").write_text("x")
    assert gc(str(tmp_path / "file")) == 2
    assert "is not a folder" in capsys.readouterr().err
    assert gc("dbfs:/checkpoints/orders") == 2
    assert "URI" in capsys.readouterr().err
    root = stream_at(tmp_path / "ckpt", 2)
    (root / "_mssql_cdc_generation.json").write_text('{"generation": "two"}')
    before = tree(root)
    assert gc(str(root)) == 2
    assert "_mssql_cdc_generation.json" in capsys.readouterr().err
    assert tree(root) == before


def test_the_metrics_folders_under_metrics_path_go_with_their_generations(tmp_path: Path) -> None:
    root = stream_at(tmp_path / "ckpt", 2)
    metrics = tmp_path / "metrics"
    for name in ("orders", "orders.g1", "orders.g2", "other", "other.g1"):
        (metrics / name).mkdir(parents=True)
        (metrics / name / "range-a-b.json").write_text("{}")
    assert gc(str(root), "--app-id", "orders", "--metrics-path", str(metrics)) == 0
    assert sorted(p.name for p in metrics.iterdir()) == ["orders.g2", "other", "other.g1"]


def test_two_collections_at_once_remove_each_generation_once_without_failing(
    tmp_path: Path,
) -> None:
    root = stream_at(tmp_path / "ckpt", 6)
    for g in range(1, 6):
        for i in range(200):
            (root / "_generations" / str(g) / "offsets" / f"x{i}").write_text("v1")
    errors: list[BaseException] = []
    removed: list[int] = []

    def collect() -> None:
        try:
            removed.extend(r.generation for r in collect_garbage(str(root)).removed)
        except BaseException as exc:  # noqa: BLE001 - the test reports any failure
            errors.append(exc)

    threads = [threading.Thread(target=collect) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert set(removed) == {0, 1, 2, 3, 4, 5}
    assert [p.name for p in (root / "_generations").iterdir()] == ["6"]
