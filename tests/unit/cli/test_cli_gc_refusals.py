"""`mssql-cdc gc` removes only what Spark or the library wrote (decision 1311): a metrics path
the sink would refuse, a metrics folder or generation folder holding someone else's files,
are refused with exit 2 and nothing removed, in a dry run and a real run alike."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.unit.cli.test_cli_gc import gc, stream_at, tree


def someones_files(folder: Path) -> Path:
    """A folder of a person's own files, with a subfolder named like an app id."""
    (folder / "root" / "photos").mkdir(parents=True)
    (folder / "root" / "photos" / "cat.jpg").write_bytes(b"\xff\xd8 a cat")
    (folder / "root" / "thesis.tex").write_text("chapter one")
    (folder / "root.g1").mkdir()
    (folder / "root.g1" / "budget.csv").write_text("rent,900")
    return folder


SPELLINGS = ["plain", "trailing slash", "a/../a", "relative", "symbolic link"]


def spelled(folder: Path, spelling: str) -> str:
    if spelling == "trailing slash":
        return f"{folder}/"
    if spelling == "a/../a":
        return f"{folder}/../{folder.name}"
    if spelling == "relative":
        return os.path.relpath(folder)
    if spelling == "symbolic link":
        link = folder.parent / "link-to-data"
        link.symlink_to(folder, target_is_directory=True)
        return str(link)
    return str(folder)


@pytest.mark.parametrize("dry_run", [False, True], ids=["real run", "dry run"])
@pytest.mark.parametrize("spelling", SPELLINGS)
def test_gc_never_touches_a_folder_of_someones_files_however_metrics_path_is_spelled(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    spelling: str,
    dry_run: bool,
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    data = someones_files(tmp_path / "data")
    root = stream_at(tmp_path / "ckpt", 2)
    before, checkpoint_before = tree(data), tree(root)
    argv = ["--app-id", "root", "--metrics-path", spelled(data, spelling)]
    assert gc(str(root), *argv, *(["--dry-run"] if dry_run else [])) == 2
    err = capsys.readouterr().err
    assert "refuses to remove what neither Spark nor mssql-cdc wrote" in err
    assert str(data.resolve() / "root" / "thesis.tex") in err
    assert "Traceback" not in err
    assert tree(data) == before
    assert tree(root) == checkpoint_before  # nothing at all removed, not even generations


@pytest.mark.parametrize("dry_run", [False, True], ids=["real run", "dry run"])
@pytest.mark.parametrize("metrics_path", ["/", "//", "/tmp/..", "///"])
def test_the_filesystem_root_as_metrics_path_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], metrics_path: str, dry_run: bool
) -> None:
    # An app id that names nothing at the filesystem root: should the refusal ever be lost,
    # this test fails without removing anything real (never pass "root" or a real name here).
    app_id = f"mssql-cdc-gc-test-{os.getpid()}-{tmp_path.name}"
    assert not Path("/", app_id).exists()
    root = stream_at(tmp_path / "ckpt", 2)
    before = tree(root)
    argv = ["--app-id", app_id, "--metrics-path", metrics_path]
    assert gc(str(root), *argv, *(["--dry-run"] if dry_run else [])) == 2
    err = capsys.readouterr().err
    assert "the filesystem root" in err
    assert "pass a folder of its own" in err
    assert tree(root) == before


def test_the_home_folder_or_its_parent_as_metrics_path_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home" / "ann"
    (home / "docs").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    root = stream_at(tmp_path / "ckpt", 2)
    assert gc(str(root), "--app-id", "ann", "--metrics-path", str(home.parent)) == 2
    assert "a parent of the home folder" in capsys.readouterr().err
    assert gc(str(root), "--app-id", "docs", "--metrics-path", str(home)) == 2
    assert "the home folder" in capsys.readouterr().err
    assert (home / "docs").is_dir()


def test_a_metrics_folder_of_the_librarys_own_files_is_removed(tmp_path: Path) -> None:
    root = stream_at(tmp_path / "ckpt", 2)
    metrics = tmp_path / "metrics"
    names = [
        "range-0x0A-0x0B.json",
        "event-schema_change-dbo_orders-0x0A.json",
        "chunk-3.json",
        "progress-1.json",
        ".range-0x0A-0x0B.json.a1b2c3d4e5f6.tmp",
    ]
    for folder in ("orders", "orders.g1"):
        (metrics / folder / "_backfill").mkdir(parents=True)
        for name in names:
            (metrics / folder / name).write_text("{}")
        (metrics / folder / "_backfill" / "chunk-0.json").write_text("{}")
    (metrics / "orders.g2").mkdir()
    assert gc(str(root), "--app-id", "orders", "--metrics-path", str(metrics)) == 0
    assert [p.name for p in metrics.iterdir()] == ["orders.g2"]


@pytest.mark.parametrize(
    "stranger",
    ["notes.txt", "range-a.csv", "range-a.json.bak", ".hidden", "sub/range-a.json", "_backfill/x"],
)
def test_one_foreign_file_in_a_metrics_folder_refuses_the_whole_gc(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], stranger: str
) -> None:
    root = stream_at(tmp_path / "ckpt", 2)
    metrics = tmp_path / "metrics"
    (metrics / "orders").mkdir(parents=True)
    (metrics / "orders" / "range-a-b.json").write_text("{}")
    (metrics / "orders" / stranger).parent.mkdir(parents=True, exist_ok=True)
    (metrics / "orders" / stranger).write_text("mine")
    before, checkpoint_before = tree(metrics), tree(root)
    assert gc(str(root), "--app-id", "orders", "--metrics-path", str(metrics)) == 2
    err = capsys.readouterr().err
    assert str(metrics / "orders" / stranger.split("/")[0]) in err
    assert tree(metrics) == before
    assert tree(root) == checkpoint_before


def test_a_link_in_a_metrics_folder_is_refused_and_its_target_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = stream_at(tmp_path / "ckpt", 2)
    metrics, precious = tmp_path / "metrics", tmp_path / "precious"
    (metrics / "orders").mkdir(parents=True)
    precious.mkdir()
    (precious / "a.json").write_text("{}")
    (metrics / "orders" / "range-a-b.json").symlink_to(precious / "a.json")
    assert gc(str(root), "--app-id", "orders", "--metrics-path", str(metrics)) == 2
    assert "a symbolic link" in capsys.readouterr().err
    assert (metrics / "orders" / "range-a-b.json").is_symlink()
    assert (precious / "a.json").read_text() == "{}"


@pytest.mark.parametrize("dry_run", [False, True], ids=["real run", "dry run"])
@pytest.mark.parametrize(
    ("stranger", "shown"),
    [
        ("_generations/1/thesis.tex", "_generations/1/thesis.tex"),
        ("_generations/1/offsets.old/0", "_generations/1/offsets.old"),
        *[("_generations/1/_mssql_cdc_metrics/notes.txt",) * 2],
        ("_mssql_cdc_metrics/notes.txt", "_mssql_cdc_metrics/notes.txt"),
        ("metadata/photo.jpg", "metadata"),
    ],
)
def test_a_generation_holding_someones_files_is_refused_and_nothing_removed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], stranger: str, shown: str, dry_run: bool
) -> None:
    root = stream_at(tmp_path / "ckpt", 2)
    if stranger.startswith("metadata/"):
        (root / "metadata").unlink()
    (root / stranger).parent.mkdir(parents=True, exist_ok=True)
    (root / stranger).write_text("mine")
    before = tree(root)
    assert gc(str(root), *(["--dry-run"] if dry_run else [])) == 2
    err = capsys.readouterr().err
    assert "refuses to remove what neither Spark nor mssql-cdc wrote" in err
    assert str(root / shown) in err
    assert tree(root) == before


def test_a_generation_folder_spark_never_started_is_removed(tmp_path: Path) -> None:
    root = stream_at(tmp_path / "ckpt", 3)
    for name in ("offsets", "commits", "sources", "_mssql_cdc_metrics"):
        for p in sorted((root / "_generations" / "2" / name).rglob("*"), reverse=True):
            p.unlink() if p.is_file() else p.rmdir()
        (root / "_generations" / "2" / name).rmdir()
    (root / "_generations" / "2" / "metadata").unlink()
    (root / "_generations" / "2" / ".metadata.crc").unlink()
    assert gc(str(root)) == 0
    assert [p.name for p in (root / "_generations").iterdir()] == ["3"]


def test_a_default_metrics_folder_that_is_the_working_folder_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = stream_at(tmp_path / "ckpt", 2)
    monkeypatch.chdir(root / "_generations" / "1" / "_mssql_cdc_metrics")
    before = tree(root)
    assert gc(str(root)) == 2
    assert "the working folder" in capsys.readouterr().err
    assert tree(root) == before


def test_a_folder_gc_cannot_read_is_refused_without_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = stream_at(tmp_path / "ckpt", 2)
    metrics = tmp_path / "metrics"
    (metrics / "orders").mkdir(parents=True)
    (metrics / "orders" / "range-a-b.json").write_text("{}")
    scandir = os.scandir

    def unreadable(path: Any) -> Any:  # what a folder without read permission answers
        if str(path) == str(metrics / "orders"):
            raise PermissionError(13, "Permission denied", str(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", unreadable)
    assert gc(str(root), "--app-id", "orders", "--metrics-path", str(metrics)) == 2
    err = capsys.readouterr().err
    assert f"cannot look into {metrics / 'orders'} (Permission denied)" in err
    assert "Traceback" not in err
    assert (metrics / "orders" / "range-a-b.json").exists()
    assert (root / "_generations" / "1").is_dir()
