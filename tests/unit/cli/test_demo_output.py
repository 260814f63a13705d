"""`mssql-cdc demo --out`: it empties only a folder it made, and never a shared one."""

from __future__ import annotations

from pathlib import Path

import pytest

import mssql_cdc.spark
from mssql_cdc.cli import main
from mssql_cdc.cli.demo_output import MARKER, prepare_out_dir
from mssql_cdc.errors import ConfigError


class _SparkStarted(Exception):
    pass


@pytest.fixture(autouse=True)
def no_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    """A demo that got past its folder check stops where it would start Spark."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise _SparkStarted

    monkeypatch.setattr(mssql_cdc.spark, "local_session", refuse)


def someones_files(folder: Path) -> dict[str, str]:
    (folder / "thesis").mkdir(parents=True)
    (folder / "thesis" / "chapter1.tex").write_text("\\chapter{One}")
    (folder / "notes.txt").write_text("keep me")
    (folder / ".bashrc").write_text("alias ll='ls -l'")
    return tree(folder)


def tree(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): p.read_text() if p.is_file() else "<dir>"
        for p in sorted(folder.rglob("*"))
    }


def test_a_folder_of_someones_files_is_refused_and_nothing_is_deleted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = someones_files(tmp_path / "stuff")

    code = main(["demo", "--out", str(tmp_path / "stuff")])

    err = capsys.readouterr().err
    assert code == 2
    assert "holds files the demo did not make" in err
    assert "--force" in err
    assert tree(tmp_path / "stuff") == before


@pytest.mark.parametrize("out", [".", "..", "work/.."], ids=["dot", "parent", "dotted"])
def test_the_working_folder_or_a_parent_is_refused_even_with_force(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], out: str
) -> None:
    work = tmp_path / "work"
    before = someones_files(work)
    monkeypatch.chdir(work)

    code = main(["demo", "--out", out, "--force"])

    assert code == 2
    assert "working folder" in capsys.readouterr().err
    assert tree(work) == before


def test_the_home_folder_and_the_root_are_refused_even_with_force(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    before = someones_files(home)
    monkeypatch.setenv("HOME", str(home))

    with pytest.raises(ConfigError, match="the home folder"):
        prepare_out_dir(home, force=True)
    with pytest.raises(ConfigError, match="the filesystem root"):
        prepare_out_dir("/", force=True)
    assert tree(home) == before


def test_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "out").write_text("mine")
    with pytest.raises(ConfigError, match="is a file"):
        prepare_out_dir(tmp_path / "out", force=True)
    assert (tmp_path / "out").read_text() == "mine"


def test_a_new_or_empty_folder_is_taken_and_marked(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    for out in (tmp_path / "new" / "deeper", tmp_path / "empty"):
        assert prepare_out_dir(out) == out.resolve()
        assert sorted(p.name for p in out.iterdir()) == [MARKER]


def test_the_folder_of_an_earlier_run_is_emptied_run_after_run(tmp_path: Path) -> None:
    out = tmp_path / "demo-output"
    for _ in range(2):
        prepare_out_dir(out)
        (out / "checkpoint" / "offsets").mkdir(parents=True)
        (out / "emulator.db").write_bytes(b"sqlite")
    prepare_out_dir(out)
    assert sorted(p.name for p in out.iterdir()) == [MARKER]


def test_force_empties_a_folder_without_following_its_links(tmp_path: Path) -> None:
    kept = someones_files(tmp_path / "elsewhere")
    out = tmp_path / "out"
    someones_files(out)
    (out / "link").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (out / MARKER).unlink(missing_ok=True)

    prepare_out_dir(out, force=True)

    assert sorted(p.name for p in out.iterdir()) == [MARKER]
    assert tree(tmp_path / "elsewhere") == kept


def test_a_marked_folder_passes_the_check_and_the_demo_goes_on(tmp_path: Path) -> None:
    out = tmp_path / "demo-output"
    prepare_out_dir(out)
    (out / "spark").mkdir()
    with pytest.raises(_SparkStarted):
        main(["demo", "--out", str(out)])
    assert (out / MARKER).is_file()
    assert not (out / "spark").exists()
