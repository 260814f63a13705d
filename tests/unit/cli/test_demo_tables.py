"""`mssql-cdc demo --tables N`: which tables it makes, which streams it pauses, bad counts."""

from __future__ import annotations

from pathlib import Path

import pytest

import mssql_cdc.spark
from mssql_cdc.cli import main
from mssql_cdc.cli.demo_workload import paused_instances, table_names
from mssql_cdc.errors import ConfigError


def test_one_table_is_the_classic_orders_table() -> None:
    assert table_names(1) == ("dbo.orders",)


def test_five_tables_are_numbered_and_the_last_two_streams_pause() -> None:
    names = table_names(5)

    assert names == tuple(f"dbo.orders_0{n}" for n in range(1, 6))
    assert paused_instances(("a", "b", "c", "d", "e")) == ("d", "e")


@pytest.mark.parametrize(("count", "stopped"), [(2, ("b",)), (3, ("c",)), (4, ("c", "d"))])
def test_half_the_streams_rounded_down_pause(count: int, stopped: tuple[str, ...]) -> None:
    assert paused_instances(tuple("abcd"[:count])) == stopped


@pytest.mark.parametrize("count", [0, -1, 21, 10**12, True, "5", 2.0, None])
def test_a_count_outside_one_to_twenty_is_refused(count: object) -> None:
    with pytest.raises(ConfigError, match="pass a whole number of tables from 1 to 20"):
        table_names(count)


@pytest.mark.parametrize("flag", ["0", "21", "-3"])
def test_the_cli_refuses_a_bad_count_before_it_touches_the_folder(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    flag: str,
) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("Spark was started")

    monkeypatch.setattr(mssql_cdc.spark, "local_session", refuse)
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")

    code = main(["demo", "--tables", flag, "--out", str(out)])

    assert code == 2
    assert f"--tables {int(flag)}" in capsys.readouterr().err
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
