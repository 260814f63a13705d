"""A gc report counts only what its own run removed: a file another gc removed first is not
counted, and an entry already gone is reported as already removed (decision 1311)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from mssql_cdc.core.generation_gc import collect_garbage
from tests.unit.cli.test_cli_gc import stream_at


def bytes_under(folder: Path) -> int:
    return sum(p.lstat().st_size for p in folder.rglob("*") if not p.is_dir())


def test_files_another_gc_removed_meanwhile_are_not_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = stream_at(tmp_path / "ckpt", 2)
    for name in ("metadata", ".metadata.crc"):  # generation 0 gone: generation 1 goes first
        (root / name).unlink()
    for name in ("offsets", "commits", "sources", "_mssql_cdc_metrics"):
        shutil.rmtree(root / name)
    offsets = root / "_generations" / "1" / "offsets"
    for i in range(20):
        (offsets / f"{i + 10}").write_text("v1\n" + "x" * 1000)
    generation_1 = root / "_generations" / "1"
    total = bytes_under(generation_1)
    others = sorted(offsets.iterdir())[: len(list(offsets.iterdir())) // 2]
    taken_by_the_other = sum(p.lstat().st_size for p in others)
    unlink = os.unlink
    fired = False

    def another_gc_first(path: Any, *args: Any, **kwargs: Any) -> None:
        # The first time this run removes a file, another gc removes half of `offsets`.
        nonlocal fired
        if not fired:
            fired = True
            for p in others:
                unlink(p)
        unlink(path, *args, **kwargs)

    monkeypatch.setattr(os, "unlink", another_gc_first)
    report = collect_garbage(str(root))
    ours = [r for r in report.removed if r.path == str(generation_1)]
    assert len(ours) == 1
    assert ours[0].bytes == total - taken_by_the_other
    assert not generation_1.exists()


def test_an_entry_another_gc_removed_first_is_reported_as_already_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = stream_at(tmp_path / "ckpt", 3)
    unlink = os.unlink
    fired = False

    def another_gc_first(path: Any, *args: Any, **kwargs: Any) -> None:
        nonlocal fired
        if not fired:
            fired = True
            shutil.rmtree(root / "_generations" / "2")
        unlink(path, *args, **kwargs)

    monkeypatch.setattr(os, "unlink", another_gc_first)
    report = collect_garbage(str(root))
    gone = str(root / "_generations" / "2")
    assert [r.path for r in report.already_removed] == [gone]
    assert gone not in [r.path for r in report.removed]
    assert report.to_json()["already_removed"] == [{"generation": 2, "path": gone}]
    assert [p.name for p in (root / "_generations").iterdir()] == ["3"]
