"""What `seed()` checks of the source and its arguments before anything is written, over the
emulator; the oracle is the emulator's own LSNs and Python's own rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from mssql_cdc.core.lsn import increment
from mssql_cdc.emulator import Emulator
from mssql_cdc.errors import ConfigError, DataLossError
from mssql_cdc.options.config import SourceConfig
from mssql_cdc.snapshot.probe import open_probe
from mssql_cdc.snapshot.seed import checked_lsn, seed


def _source(tmp_path: Path) -> tuple[Emulator, SourceConfig, list[str]]:
    path = tmp_path / "e.db"
    emu = Emulator.create(path)
    emu.create_table("dbo.t", {"k": "int", "v": "int"}, primary_key="k")
    emu.enable_cdc("dbo.t")
    lsns = [
        emu.commit([("insert", "dbo.t", {"k": k, "v": k})], at=f"2026-09-28T14:00:0{k}")
        for k in range(1, 5)
    ]
    config = SourceConfig.from_options(
        {"captureInstance": "dbo_t", "backend": "emulator", "emulatorPath": str(path)}
    )
    return emu, config, lsns


def test_a_copy_lsn_the_cleanup_passed_is_refused_naming_it_and_min_lsn(tmp_path: Path) -> None:
    emu, config, lsns = _source(tmp_path)
    emu.cleanup("dbo_t", lsns[2])
    probe = open_probe(config)
    with pytest.raises(DataLossError) as caught:
        checked_lsn(probe, lsns[0])
    assert lsns[0] in str(caught.value)
    assert f"min_lsn {emu.min_lsn('dbo_t')}" in str(caught.value)
    assert caught.value.min_lsn == emu.min_lsn("dbo_t")
    assert caught.value.first_lsn == increment(lsns[0])


def test_a_copy_lsn_whose_next_changes_are_held_is_accepted_with_its_commit_time(
    tmp_path: Path,
) -> None:
    emu, config, lsns = _source(tmp_path)
    emu.cleanup("dbo_t", lsns[2])
    at = checked_lsn(open_probe(config), lsns[2])
    assert (at.lsn, at.commit_ts) == (lsns[2], "2026-09-28T14:00:03.000")


def test_a_copy_lsn_above_the_newest_change_is_refused(tmp_path: Path) -> None:
    _, config, lsns = _source(tmp_path)
    with pytest.raises(ConfigError, match="above the source's newest LSN"):
        checked_lsn(open_probe(config), increment(lsns[-1]))


@pytest.mark.parametrize("bad", ["yesterday", "0xZZ", ""], ids=["a-word", "not-hex", "empty"])
def test_an_lsn_that_is_not_one_is_refused_before_anything_is_read(
    tmp_path: Path, bad: str
) -> None:
    _, config, _ = _source(tmp_path)
    with pytest.raises(ConfigError, match=r"at_lsn=.* is not an LSN"):
        seed(
            object(),  # type: ignore[arg-type]  # never reached: the LSN is checked first
            config,
            str(tmp_path / "copy"),
            str(tmp_path / "bronze"),
            "orders",
            str(tmp_path / "ckpt"),
            str(tmp_path / "facts"),
            bad,
        )


def test_the_copy_and_the_target_must_be_two_tables(tmp_path: Path) -> None:
    _, config, lsns = _source(tmp_path)
    with pytest.raises(ConfigError, match="source_table"):
        seed(
            object(),  # type: ignore[arg-type]
            config,
            str(tmp_path / "bronze"),
            str(tmp_path / "bronze"),
            "orders",
            str(tmp_path / "ckpt"),
            str(tmp_path / "facts"),
            lsns[0],
        )
